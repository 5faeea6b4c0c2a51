"""The Optuna side of a sweep: its study (`SweepStudy`), where the study is stored (a journal
file per sweep by default), how a trial's params, state and attrs are told to it, the pruners
of Polyaxon's early-stopping policies, and a sweep resumed or extended. The pure planning above
it (`search._kinds`, `_matrix_plan`, `_random_draws`, `_space`, `_stopping`) never imports this
package, so planning and ``compile`` never import Optuna; nothing is imported here on purpose:
the package loads each module on first use (`search.SweepStudy`, `search.extend_study`).
"""
