"""The evidence behind the notebooks' hedges: `command` (`evidence NAME`) and `sweeps/` (one module per notebook)."""
