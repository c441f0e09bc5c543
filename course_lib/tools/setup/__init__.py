"""Setting up a machine: `doctor` (is it ready?) and `install_torch` (the right torch build, run by `make install`)."""
