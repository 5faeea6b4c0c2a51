"""Any Polyaxonfile as a Prefect deployment: typed forms and schedules."""
