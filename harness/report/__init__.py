"""Report building: tables (show), later HTML/plots/compare."""
