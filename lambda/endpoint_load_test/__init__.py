"""EndpointLoadTest: the plan, worker and merge steps of its state machine."""
