"""Report code of single families (their checklist items and plots), one module per family."""
