"""Training, the top library layer: the embedded target models (target.py, `train-target`) and the drafters
(drafter.py, `train-drafter`). Both drive the layers below (models, targets, samplers) and nothing imports them
but the command line, scripts and tests."""
