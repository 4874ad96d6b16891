"""AWS Lambda handlers shipped as plain folder assets (standard library and boto3 only)."""
