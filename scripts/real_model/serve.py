"""Serve a GGUF model with llama.cpp's own HTTP server (xllamacpp) until
SIGTERM or SIGINT: python serve.py MODEL.gguf ALIAS PORT [SLOTS [CTX [CACHE]]].

One slot (by default) and one thread: on two shared cores a second thread
decodes slower, and one slot keeps requests from being batched together. Prompt
caching is off (CACHE 0, the default) so that the same request gets the same
greedy answer at temperature 0, whatever the server computed before; CACHE 1
turns it on for long conversations (tau2's 8k-token agent prompt), whose
prefix is then read once, not at every turn. CTX: the context [8192]."""

import signal
import sys
import threading

import xllamacpp


def main():
    path, alias, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    slots = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    context = int(sys.argv[5]) if len(sys.argv) > 5 else 8192
    cache = len(sys.argv) > 6 and sys.argv[6] == "1"
    params = xllamacpp.CommonParams()
    params.model.path = path
    params.model_alias = alias
    params.hostname = "127.0.0.1"
    params.port = port
    # The model's own chat template renders the tools and role "tool"
    # messages; its tool-call parser turns the calls into tool_calls.
    params.use_jinja = True
    params.n_ctx = context
    params.n_parallel = slots
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.cache_prompt = cache
    server = xllamacpp.Server(params)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    del server


if __name__ == "__main__":
    main()
