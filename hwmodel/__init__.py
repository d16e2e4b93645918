"""Hardware and model performance model: specs, prediction, calibration, local probe."""
