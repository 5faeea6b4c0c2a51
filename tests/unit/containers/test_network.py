"""A distributed run's network: its name, its replicas' hostnames (DNS labels, as pods are
named in a cluster), the create command and the static addresses used where there is no DNS."""

from __future__ import annotations

import pytest

from polyaxon_prefect.containers import (
    LABEL_SESSION,
    ContainerRun,
    network_create_argv,
    network_name,
    replica_hostname,
    run_argv,
    static_addresses,
)

UUID = "8F2A41c0d9e6471b9a1e3c5d7f9b0a12"


def test_hostnames_are_dns_labels_named_like_the_pods() -> None:
    assert replica_hostname(UUID, "master-0") == "plx-8f2a41c0d9e6-master-0"
    assert replica_hostname(UUID, "worker-12") == "plx-8f2a41c0d9e6-worker-12"
    long = replica_hostname(UUID, "a_very_long_replica_type_name_" * 3 + "-1")
    assert len(long) <= 63 and long.replace("-", "").isalnum() and not long.endswith("-")


def test_the_network_is_per_attempt_and_labelled_as_its_containers() -> None:
    assert network_name(UUID, "ab12cd") == "plx-8f2a41c0d9e6-ab12cd"
    assert network_name(UUID, "ab12cd") != network_name(UUID, "ef34gh")
    argv = network_create_argv("podman", "plx-net", {LABEL_SESSION: "s1", "b": "2"})
    assert argv == [
        "podman",
        *("network", "create", "--label", "b=2", "--label", f"{LABEL_SESSION}=s1", "plx-net"),
    ]


def test_static_addresses_skip_the_gateway_and_fail_when_the_subnet_is_full() -> None:
    hosts = ["m-0", "w-0", "w-1"]
    assert static_addresses("10.89.3.0/24", hosts) == {
        "m-0": "10.89.3.2",
        "w-0": "10.89.3.3",
        "w-1": "10.89.3.4",
    }
    with pytest.raises(ValueError, match="no address left for w-0"):
        static_addresses("10.89.3.0/30", hosts)  # .1 the gateway, .2 m-0
    with pytest.raises(ValueError):
        static_addresses("not-a-subnet", hosts)


def test_a_replica_on_a_network_without_dns_gets_its_address_and_every_hosts_entry() -> None:
    argv = run_argv(
        "podman",
        ContainerRun(
            name="plx-x-worker-0-ab",
            image="img:1",
            argv=["python", "-c", "pass"],
            network="plx-net",
            hostname="plx-x-worker-0",
            aliases=("plx-x-worker-0",),
            ip="10.89.3.3",
            hosts={"plx-x-worker-0": "10.89.3.3", "plx-x-master-0": "10.89.3.2"},
        ),
    )
    flags = argv[argv.index("--network") : argv.index("img:1")]
    assert flags == [
        *("--network", "plx-net", "--network-alias", "plx-x-worker-0", "--ip", "10.89.3.3"),
        *("--hostname", "plx-x-worker-0"),
        *("--add-host", "plx-x-master-0:10.89.3.2", "--add-host", "plx-x-worker-0:10.89.3.3"),
    ]
    assert argv[-3:] == ["python", "-c", "pass"]


def test_with_dns_only_the_alias_and_hostname_are_given() -> None:
    argv = run_argv(
        "docker",
        ContainerRun(name="n", image="img", argv=[], network="net", hostname="h", aliases=("h",)),
    )
    assert "--ip" not in argv and "--add-host" not in argv
    assert argv[argv.index("--network-alias") + 1] == "h"
