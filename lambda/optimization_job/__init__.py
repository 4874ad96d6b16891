"""CloudFormation custom resource (CDK Provider framework) running a SageMaker EAGLE optimization job.

Shipped alone as a Lambda asset: standard library and boto3/botocore only, no other speculative_infra import.
"""
