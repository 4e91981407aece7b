"""medscope.io.safe_text: URL credentials redacted where printed, paths kept inside the input root, text and JSON read in any common encoding with errors naming the file."""

from __future__ import annotations

import pytest

from medscope.errors import MedScopeError
from medscope.io import safe_text


@pytest.mark.timeout(120)
@pytest.mark.parametrize("text,want", [
    ("https://host/a@b", "https://host/a@b"),
    ("s3://AKIAXXX:secretkey@bucket/x", "s3://***@bucket/x"),
    ("http://u:p@[::1]:8000/v1", "http://***@[::1]:8000/v1"),
    ("see https://k@h.org and http://a:b@c.org", "see https://***@h.org and http://***@c.org"),
    ("https://bob:p%40ss@h.org/v1", "https://***@h.org/v1"),
    ("ftp://anon:pw@files.example.org/x", "ftp://***@files.example.org/x"),
    ('{"base_url": "http://u:pw@127.0.0.1:9/v1"}', '{"base_url": "http://***@127.0.0.1:9/v1"}'),
])
def test_redaction(text, want):
    assert safe_text.redact_urls(text) == want


@pytest.mark.timeout(120)
@pytest.mark.parametrize("rel,want", [("a/./b.png", "a/b.png"), ("C:\\x.png", None), ("a/b/../../..", None),
                                      ("file:///etc/passwd", None), ("a/%2e%2e/b.png", "a/%2e%2e/b.png"), ("", None),
                                      ("a\x00b.png", None), ("./../x.png", None)])
def test_inside_root(rel, want):
    if want is None:
        with pytest.raises(MedScopeError):
            safe_text.inside_root(rel)
    else:
        assert safe_text.inside_root(rel) == want


@pytest.mark.timeout(120)
def test_text_in_any_common_encoding_reads_the_same():
    text = "ImageId,EncodedPixels\r\n1.2.3,-1\r\ncafé,€ 1 2\r\n"
    want = text.replace("\r\n", "\n")
    for enc in ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "cp1252"):
        assert safe_text.decode_text(text.encode(enc), "x.csv") == want, enc
    assert safe_text.decode_text(b"a\rb\r", "x") == "a\nb\n"


@pytest.mark.timeout(120)
def test_json_errors_name_the_file_line_and_field(tmp_path):
    for text, reason in (('{"a": [1, 2', "not valid JSON"), ("[" * 5000 + "]" * 5000, "JSON nested too deeply"),
                         ('{"models": 1, "models": 2}', "duplicate key")):
        with pytest.raises(MedScopeError) as err:
            safe_text.loads_json(text, "sweep.json")
        assert str(err.value).startswith("sweep.json: " + reason)
    assert safe_text.loads_json('{"a": [1, {"b": null}]}', "x") == {"a": [1, {"b": None}]}

    from medscope.reader import pack

    (tmp_path / "key.json").write_text('{"format": "medscope-reader-key", "items": [')
    with pytest.raises(MedScopeError) as err:
        pack.read_key(str(tmp_path))
    assert str(tmp_path / "key.json") in str(err.value) and "truncated" in str(err.value)

    from pipelines.score import items_of

    (tmp_path / "run" / "episodes").mkdir(parents=True)
    (tmp_path / "run" / "sweep.json").write_text('{"items": "x.parquet", ')
    with pytest.raises(MedScopeError) as err:
        items_of(str(tmp_path / "run" / "episodes"))
    assert "sweep.json: not valid JSON" in str(err.value)


@pytest.mark.timeout(120)
def test_url_credentials_are_redacted_where_printed(capsys):
    from pipelines.support.jobs import guarded, print_summary

    url = "https://alice:s3cr3t-pw@llm.example.org/v1"
    assert safe_text.redact_url(url) == "https://***@llm.example.org/v1"
    assert safe_text.redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    print_summary({"base_url": url, "models": [{"endpoint": "http://tok123@h/x"}]})

    def boom():
        raise MedScopeError(f"cannot reach {url}")

    assert guarded(boom) == 2
    out = capsys.readouterr()
    assert "s3cr3t" not in out.out + out.err and "tok123" not in out.out
    assert "llm.example.org" in out.out and "llm.example.org" in out.err
