"""parse_query / parse_form go through afs_query_parse_pickle (one call, one pickle load):
they must give exactly what afs_query_parse's tree gives when walked node by node, and
raise the same error (class and message), for every style and option set below."""
from __future__ import annotations

import itertools
import random
from ctypes import byref

import pytest

import afserialization as afs
from afserialization import decoders
from afserialization._ffi import lib
from afserialization.values import Value

QUERIES = [
    "", "a=1", "a=1&b=2&a=3", "key", "x=1&&y=", "?x=1", "a+b=c+d", "a%5Bb%5D=1",
    "a[]=1&a[]=2", "u[l][]=1&u[n]=x", "a[b=1&c]=2&[d]=3", "a[b]x=1", "a=1&a=2&b=3",
    "a[1]=y&a[0]=x", "a[0]=x&a[2]=y", "a[0][k]=1&a[1][k]=2", "a[][k]=1&a[][j]=2&a[][k]=3",
    "b=1&b=2&a[x]=1&b=3", "a[b][c][d][e][f][g][h]=1", "a=%C3%A9&%C3%A9=a", "s=a+b&s=c",
    "a[]=1&a[x]=2", "a=1&a[b]=2", "a=%zz", "a=%E9", "%E9=1", "a=%4", "=v&k", "a=%00b",
]
OPTIONS = [dict(array_style=s, keep_bad_escapes=k, refuse_deep=r, max_depth=d)
           for s, k, r, d in itertools.product(["brackets", "no_brackets", "indexed"], [False, True],
                                               [False, True], [1, 5])]


def walked(text: str, form: bool, **kw: object) -> object:
    """The tree of afs_query_parse / afs_form_body_parse, walked with the accessors."""
    data = text.encode()
    o = decoders._options(kw.get("array_style", "brackets"), form or bool(kw.get("plus_as_space")),
                          kw.get("max_depth", 5), kw.get("max_params", 1000), kw.get("max_length", 65536),
                          kw.get("keep_bad_escapes", False), kw.get("refuse_deep", False))
    f = lib.afs_form_body_parse if form else lib.afs_query_parse
    return Value._adopt(f(data, len(data), byref(o)))._to_python_by_walking()


def outcome(f, *args, **kw):
    try:
        return ("ok", f(*args, **kw))
    except afs.SerializationError as e:
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("text", QUERIES)
def test_that_the_pickle_path_gives_the_walked_tree(text):
    for kw in OPTIONS:
        want = outcome(walked, text, False, **kw)
        got = outcome(afs.parse_query, text, **kw)
        assert got == want, (text, kw)
        if got[0] == "ok":  # the key order too
            assert repr(got[1]) == repr(want[1])
        assert outcome(afs.parse_form, text, **kw) == outcome(walked, text, True, **kw)


def test_that_limits_raise_as_before():
    many = "&".join(f"k{i}=v" for i in range(1001))
    with pytest.raises(afs.LimitError, match="max_params"):
        afs.parse_query(many)
    with pytest.raises(afs.LimitError, match="max_length"):
        afs.parse_query("a=" + "x" * 65537)
    assert outcome(afs.parse_query, "a=" + "x" * 40, max_length=10) == outcome(walked, "a=" + "x" * 40, False, max_length=10)


def test_that_random_queries_agree():
    rng = random.Random(26)
    tokens = ["a", "b", "0", "1", "[", "]", "[]", "[0]", "[a]", "=", "&", "&", "%41", "%5B", "+", "%zz", "%C3%A9"]
    for i in range(2000):
        text = "".join(rng.choice(tokens) for _ in range(rng.randrange(12)))
        kw = OPTIONS[i % len(OPTIONS)]
        got, want = outcome(afs.parse_query, text, **kw), outcome(walked, text, False, **kw)
        assert got == want and repr(got) == repr(want), (text, kw)
