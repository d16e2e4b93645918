"""Hardware and model performance model: specs, prediction, calibration, local probe.

`from hwmodel.predict import predict, Prediction` is the entry point; specs are TOML data in
`hwmodel/specs/`, each value with its source.
"""

from hwmodel.errors import HwModelError

__all__ = ["HwModelError"]
