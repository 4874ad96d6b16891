"""A scheduled synthetic canary: a few short streaming requests, published as CloudWatch metrics."""
