"""The client's timeouts: bounded by default, and a timeout the operator wrote in the URI is kept."""

from __future__ import annotations

from socialrec_pipeline.store.client import open_client, uri_option_names


def test_default_timeouts_bound_every_operation():
    client = open_client("mongodb://127.0.0.1:1/", timeout_ms=2_000)
    try:
        assert client.options.server_selection_timeout == 2.0
        assert client.options.pool_options.connect_timeout == 2.0
        assert client.options.pool_options.socket_timeout == 30.0
    finally:
        client.close()


def test_a_timeout_written_in_the_uri_wins_over_the_default():
    client = open_client("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=250&socketTimeoutMS=9000")
    try:
        assert client.options.server_selection_timeout == 0.25
        assert client.options.pool_options.socket_timeout == 9.0
        assert client.options.pool_options.connect_timeout == 5.0  # not written: the default
    finally:
        client.close()


def test_option_names_are_case_insensitive_and_split_on_either_separator():
    uri = "mongodb://u:p@h1,h2/db?replicaSet=rs0;ServerSelectionTimeoutMS=100&w=majority"
    assert uri_option_names(uri) == {"replicaset", "serverselectiontimeoutms", "w"}
    assert uri_option_names("mongodb+srv://cluster.example.net/") == set()
