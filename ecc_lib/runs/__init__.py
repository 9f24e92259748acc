"""Run folders: the folder and its records, provenance, the parameter config, notebook execution and the pipeline."""
