"""Image URIs of Deep Learning Containers, for a concrete or an unknown (token) region."""

from __future__ import annotations

from aws_cdk import Aws, CfnMapping, Stack, Token
from constructs import Construct

from speculative_infra.catalog import load_catalog
from speculative_infra.catalog.models import ContainerImage

_MAPPING_ID = "SpeculativeInfraDlcRegistryAccounts"


def newest_lmi_container() -> ContainerImage:
    """The catalog's newest LMI image: the container of the source models optimization jobs read."""
    cat = load_catalog()
    container = cat.container("lmi", cat.lmi_versions()[-1])
    assert container is not None  # the catalog's own version list
    return container


def stack_region(scope: Construct) -> str | None:
    """The stack's region, or None for an environment-agnostic stack."""
    region = Stack.of(scope).region
    return None if Token.is_unresolved(region) else region


def dlc_account(scope: Construct) -> str:
    """The DLC registry account: a literal for a known region, else a mapping lookup on AWS::Region."""
    cat = load_catalog()
    region = stack_region(scope)
    if region is not None:
        account = cat.dlc_account(region)
        if account is None:  # rule SI110 reports it; never reached for a validated deployment
            raise ValueError(f"no Deep Learning Containers registry for region {region}")
        return account
    stack = Stack.of(scope)
    mapping = stack.node.try_find_child(_MAPPING_ID)
    if not isinstance(mapping, CfnMapping):
        mapping = CfnMapping(
            stack,
            _MAPPING_ID,
            mapping={r: {"account": a} for r, a in sorted(cat.dlc_accounts.accounts.items())},
        )
    return mapping.find_in_map(Aws.REGION, "account")


def image_uri(scope: Construct, container: ContainerImage) -> str:
    return (
        f"{dlc_account(scope)}.dkr.ecr.{Aws.REGION}.{Aws.URL_SUFFIX}/{container.repository}:{container.tag}"
    )


def repository_arn(scope: Construct, container: ContainerImage) -> str:
    return f"arn:{Aws.PARTITION}:ecr:{Aws.REGION}:{dlc_account(scope)}:repository/{container.repository}"
