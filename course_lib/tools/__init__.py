"""The course's machinery, which a learner never needs to read: ``python -m course_lib <command>``.

- ``cli``              the dispatcher: one module per command, listed in ``cli.COMMAND_MODULES``
- ``doctor``           ``doctor``: is this machine ready for the course?
- ``quiz``             ``quiz check | show | stats``: validate and print the question banks
- ``exercises``        ``exercises list | reset | progress | build | grade``, backed by
  ``exercise_files`` (names, folders, reset with backups, progress), ``exercise_build`` (learner notebooks from the
  solutions), ``notebook_runner`` (run a learner's notebooks headless for ``progress``) and ``grading`` (a class's
  score tables: each submission runs in ``sandbox`` through ``grade_worker``, the verdict is computed outside)
- ``slides``           ``slides export | annotate``: offline reveal.js decks from the notebooks (assets in ``slides_assets/``)
- ``bundle``           ``bundle``: a learner-only copy of the course
- ``progress``         ``progress`` and ``record show | reset | delete``: a learner's learning record (``course_lib.record``)
- ``misconceptions``   ``misconceptions``: a class's wrong answers and exercise mistakes, from the collected records
- ``hub``              ``hub link``: nbgitpuller links; ``exercises collect``: submissions from a hub's home folders
- ``learning``         what a record says (the summaries behind ``progress`` and ``misconceptions``)
- ``site``             ``site``: the course as an offline website (templates in ``site_assets/``)
- ``install_torch``    run by ``make install`` before anything else (no torch needed): the right torch build
- ``colab``            the Colab setup cell, and the links that run a notebook on Colab or Binder
- ``prepare_notebooks`` puts the Colab cell, alt-text figures and the safe palette into the notebooks

The learner's library (``course_lib`` itself) never imports from here; a test keeps it so.
"""
