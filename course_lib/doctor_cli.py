"""``doctor``: check that this machine is ready for the course."""

from . import doctor


def register(subparsers) -> None:
    parser = subparsers.add_parser("doctor", help="check packages, widgets and the torch device; exit 1 on a FAIL")
    parser.set_defaults(handler=lambda args: doctor.run())
