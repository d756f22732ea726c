"""The time model's Python side (collectives/model/MODEL.md): fit (the arithmetic of
scripts/fit-model) and accuracy (predicted against measured, for model-check and report)."""
