"""The time model's Python side (collectives/model/MODEL.md): fit (the arithmetic of
fit_model, scripts/fit-model), accuracy (predicted against measured, for check,
scripts/model-check, and for report)."""
