"""The course's machinery, which a learner never needs to read: ``python -m course_lib <command>``.

Its modules live in rooms named after their jobs — ``setup``, ``grading``, ``exercises``, ``publish``, ``classroom``,
``evidence`` — with the dispatcher (``cli``) and the quiz command at the top. The one map of every module is the
"map of the package" in CONTRIBUTING.md (checked against the tree by ``tests/test_package_map.py``). The learner's
library (``course_lib`` itself) never imports from here; ``.importlinter`` keeps it so.
"""
