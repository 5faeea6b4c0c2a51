"""From files to validated specs: YAML with positions, presets, references, templates, errors."""
