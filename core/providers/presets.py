"""Built-in provider presets: where each provider's OpenAI-compatible endpoint lives and a
sensible fast (`spark`) and deep (`base`) model there.

A preset only fills the `[profiles.NAME]` tables the user would otherwise type; every
value can be changed afterwards in the user's config. Hosted providers name the
environment variable their own documentation uses for the API key (keys are read from
the environment only, never written to a file). Local servers list their default port:
detection asks `/v1/models` there and offers the models the server reports. `chip` and
`hw_model` are hwmodel names, set only where the deployment is known (Cerebras runs on
CS-3); elsewhere the prediction comes from online calibration (hwmodel/online.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config import ConfigError


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    base_url: str
    fast_model: str | None  # None: a local server; the model comes from its /v1/models
    deep_model: str | None
    context_window: int
    key_env: str | None = None  # hosted: the env var holding the key
    port: int | None = None  # local: the server's default loopback port
    chip: str | None = None  # hwmodel chip/system, when the provider's hardware is known
    fast_hw_model: str | None = None  # hwmodel model names for the two profiles
    deep_hw_model: str | None = None

    @property
    def local(self) -> bool:
        return self.port is not None


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("cerebras", "Cerebras Inference", "https://api.cerebras.ai/v1",
           "gpt-oss-120b", "qwen-3-235b-a22b-instruct-2507", 131072,
           key_env="CEREBRAS_API_KEY", chip="cs-3", fast_hw_model="gpt-oss-120b",
           deep_hw_model="qwen3-235b-a22b"),
    Preset("openai", "OpenAI", "https://api.openai.com/v1", "gpt-4.1-mini", "gpt-4.1",
           128000, key_env="OPENAI_API_KEY"),
    Preset("groq", "Groq", "https://api.groq.com/openai/v1", "llama-3.1-8b-instant",
           "llama-3.3-70b-versatile", 131072, key_env="GROQ_API_KEY"),
    Preset("openrouter", "OpenRouter", "https://openrouter.ai/api/v1",
           "openai/gpt-oss-120b", "qwen/qwen3-coder", 128000, key_env="OPENROUTER_API_KEY"),
    Preset("deepseek", "DeepSeek", "https://api.deepseek.com/v1", "deepseek-chat",
           "deepseek-reasoner", 64000, key_env="DEEPSEEK_API_KEY"),
    Preset("mistral", "Mistral", "https://api.mistral.ai/v1", "codestral-latest",
           "mistral-large-latest", 128000, key_env="MISTRAL_API_KEY"),
    Preset("ollama", "Ollama", "http://127.0.0.1:11434/v1", None, None, 8192, port=11434),
    Preset("lmstudio", "LM Studio", "http://127.0.0.1:1234/v1", None, None, 8192, port=1234),
    Preset("llamacpp", "llama.cpp server", "http://127.0.0.1:8080/v1", None, None, 8192,
           port=8080),
    Preset("vllm", "vLLM", "http://127.0.0.1:8000/v1", None, None, 32768, port=8000),
    Preset("sglang", "SGLang", "http://127.0.0.1:30000/v1", None, None, 32768, port=30000),
)}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; an unknown name is a ConfigError listing the known ones."""
    key = name.strip().lower().replace(" ", "").replace("-", "").replace(".", "")
    for preset in PRESETS.values():
        if key in (preset.name, preset.title.lower().replace(" ", "").replace(".", "")):
            return preset
    raise ConfigError(f"unknown provider {name!r}; known: {', '.join(PRESETS)}")
