"""DARS: capability distributions over repeated observations and the label-instability diagnostics."""
