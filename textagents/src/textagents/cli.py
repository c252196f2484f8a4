"""``textagents`` command line: serve a local model over an OpenAI-compatible API, play episodes with the
human / random / expert agents, train and evaluate SB3 agents on any registered env, build the tiny test
models."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence


def _serve(args: argparse.Namespace) -> int:
    from textagents.llm.server import ModelHTTPServer
    from textagents.llm.transformers_backend import TransformersBackend

    api_key = os.environ.get(args.api_key_env) or None
    backend = TransformersBackend(args.model, device=args.device, batch_size=args.batch_size)
    server = ModelHTTPServer(
        backend,
        host=args.host,
        port=args.port,
        model_name=args.model_name,
        api_key=api_key,
        max_request_bytes=args.max_request_bytes,
        max_tokens_limit=args.max_tokens,
        verbose=args.verbose,
    )
    auth = f"API key from ${args.api_key_env}" if api_key else "no API key"
    print(f"serving {server.endpoints.model_name!r} at {server.url} ({auth}); Ctrl-C stops", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


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


def _tiny_models(args: argparse.Namespace) -> int:
    from textagents.testing import build_tiny_models

    paths = build_tiny_models(args.directory, seed=args.seed)
    print(json.dumps({"causal": str(paths.causal), "seq2seq": str(paths.seq2seq)}))
    return 0


def _train(args: argparse.Namespace) -> int:
    from textagents.sb3.train import TrainConfig, train

    config = TrainConfig(
        env_id=args.env_id,
        algo=args.algo,
        features=args.features,
        obs_mode=args.obs_mode,
        total_timesteps=args.timesteps,
        n_envs=args.n_envs,
        seed=args.seed,
        checkpoint_every=args.checkpoint_every,
        progress_bar=not args.no_progress,
    )
    result = train(config, args.run_dir, resume=args.resume)
    print(json.dumps(result, indent=2))
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from textagents.sb3.train import evaluate

    result = evaluate(
        args.run_dir, episodes=args.episodes, seed=args.seed, env_id=args.env_id, deterministic=not args.stochastic
    )
    print(json.dumps(result, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="textagents", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="an OpenAI-compatible HTTP server over a local transformers model")
    serve.add_argument("--model", required=True, help="model directory (or a name available offline)")
    serve.add_argument("--model-name", help="the name clients use (default: the directory's name)")
    serve.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--api-key-env",
        default="TEXTAGENTS_API_KEY",
        help="environment variable holding the API key clients must send; unset = no key (default %(default)s)",
    )
    serve.add_argument("--max-request-bytes", type=int, default=1_000_000)
    serve.add_argument("--max-tokens", type=int, default=1024, help="largest max_tokens a request may ask for")
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

    tiny = commands.add_parser("tiny-models", help="build the tiny random test models and their tokenizer")
    tiny.add_argument("directory")
    tiny.add_argument("--seed", type=int, default=0)
    tiny.set_defaults(run=_tiny_models)

    train = commands.add_parser("train", help="train an SB3 agent (PPO/A2C/DQN) on a registered env")
    train.add_argument("env_id")
    train.add_argument("run_dir", help="where checkpoints, TensorBoard logs and the final model go")
    train.add_argument("--algo", default="ppo", choices=["ppo", "a2c", "dqn"])
    train.add_argument("--features", default="bow", choices=["bow", "sbert"], help="text features")
    train.add_argument("--obs-mode", default="text", choices=["text", "text+pixels"])
    train.add_argument("--timesteps", type=int, default=100_000)
    train.add_argument("--n-envs", type=int, default=4)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--checkpoint-every", type=int, default=10_000, help="timesteps between checkpoints")
    train.add_argument("--resume", action="store_true", help="continue from the run's latest checkpoint")
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
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
