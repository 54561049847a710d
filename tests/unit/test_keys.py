"""Key rendering shared by the collectors and every importer: tuple keys as ``str(key)``,
strings as themselves, bytes decoded; many keys at once, each distinct one rendered once."""

from __future__ import annotations

from correlate.frames.keys import key_str, key_texts


def test_keys_render_as_the_mofka_csvs_hold_them():
    assert key_str(("array-6aa3", 0, 1)) == "('array-6aa3', 0, 1)"
    assert key_str("inc-1") == "inc-1"
    assert key_str(b"x-\xff") == "x-\ufffd"


def test_many_keys_render_like_one_at_a_time_in_their_order():
    keys = [("x", 0), "y", ("x", 0), ("x", 1), "y", 7, ("x", 0)]
    assert key_texts(keys) == [key_str(k) for k in keys]
    assert key_texts([]) == []
