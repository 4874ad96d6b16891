"""Custom-resource handlers that benchmark an endpoint right after it is deployed."""
