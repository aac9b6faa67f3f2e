"""The model of the hardware: Device (ceilings with provenance, the device file format, a bench's facts,
cited efficiency curves) and System (devices plus network tiers).

Modules: device, device_format, ceilings, bench_facts, calibration, calibration_curves, system. The package imports none of them: import each by its full name."""
