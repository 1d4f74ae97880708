"""What every peer run shares: its job and process (`jobs`), its record (`records`), the peers' environments
(`venvs`), the settings table's row (`settings`), the exported pieces' files (`pieces`) and the recipes read as
modules (`recipes`)."""
