"""The commands of the Prefect layer's CLI: parsers' actions and what they print."""
