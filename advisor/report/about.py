"""What the tool says about itself: its version, and the documentation site (built from docs/) it links to."""

SITE = "https://vllm-advisor.readthedocs.io/en/latest/"


def tool_version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # here: it takes longer than a small log's run

    try:
        return version("vllm-advisor")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def rule_page(code: str) -> str:
    return f"{SITE}rules/{code}/"
