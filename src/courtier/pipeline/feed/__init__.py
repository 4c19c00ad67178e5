"""What flows into the frontier: discovery, the one URL intake, scope, promotion and the
store's I/O thread."""
