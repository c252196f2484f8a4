"""The BabyAI-Text ids: static tables, so that ``import textenvs`` does not import minigrid.

``BabyAI-Text-<Level>-v0`` exists for every BabyAI level minigrid registers (``MINIGRID_LEVELS``; a test
checks the table against minigrid's registry), GLAM's levels and background-knowledge-rl's levels.
"""

from __future__ import annotations

from typing import Any

from textenvs.core.registration import EnvEntry

FAMILY = "babyai_text"
ENTRY_POINT = "textenvs.envs.babyai_text.env:BabyAITextEnv"

#: Level name -> the minigrid id it wraps.
MINIGRID_LEVELS: dict[str, str] = {
    "GoToRedBallGrey": "BabyAI-GoToRedBallGrey-v0",
    "GoToRedBall": "BabyAI-GoToRedBall-v0",
    "GoToRedBallNoDists": "BabyAI-GoToRedBallNoDists-v0",
    "GoToObj": "BabyAI-GoToObj-v0",
    "GoToObjS4": "BabyAI-GoToObjS4-v0",
    "GoToObjS6": "BabyAI-GoToObjS6-v1",
    "GoToLocal": "BabyAI-GoToLocal-v0",
    "GoToLocalS5N2": "BabyAI-GoToLocalS5N2-v0",
    "GoToLocalS6N2": "BabyAI-GoToLocalS6N2-v0",
    "GoToLocalS6N3": "BabyAI-GoToLocalS6N3-v0",
    "GoToLocalS6N4": "BabyAI-GoToLocalS6N4-v0",
    "GoToLocalS7N4": "BabyAI-GoToLocalS7N4-v0",
    "GoToLocalS7N5": "BabyAI-GoToLocalS7N5-v0",
    "GoToLocalS8N2": "BabyAI-GoToLocalS8N2-v0",
    "GoToLocalS8N3": "BabyAI-GoToLocalS8N3-v0",
    "GoToLocalS8N4": "BabyAI-GoToLocalS8N4-v0",
    "GoToLocalS8N5": "BabyAI-GoToLocalS8N5-v0",
    "GoToLocalS8N6": "BabyAI-GoToLocalS8N6-v0",
    "GoToLocalS8N7": "BabyAI-GoToLocalS8N7-v0",
    "GoTo": "BabyAI-GoTo-v0",
    "GoToOpen": "BabyAI-GoToOpen-v0",
    "GoToObjMaze": "BabyAI-GoToObjMaze-v0",
    "GoToObjMazeOpen": "BabyAI-GoToObjMazeOpen-v0",
    "GoToObjMazeS4R2": "BabyAI-GoToObjMazeS4R2-v0",
    "GoToObjMazeS4": "BabyAI-GoToObjMazeS4-v0",
    "GoToObjMazeS5": "BabyAI-GoToObjMazeS5-v0",
    "GoToObjMazeS6": "BabyAI-GoToObjMazeS6-v0",
    "GoToObjMazeS7": "BabyAI-GoToObjMazeS7-v0",
    "GoToImpUnlock": "BabyAI-GoToImpUnlock-v0",
    "GoToSeq": "BabyAI-GoToSeq-v0",
    "GoToSeqS5R2": "BabyAI-GoToSeqS5R2-v0",
    "GoToRedBlueBall": "BabyAI-GoToRedBlueBall-v0",
    "GoToDoor": "BabyAI-GoToDoor-v0",
    "GoToObjDoor": "BabyAI-GoToObjDoor-v0",
    "Open": "BabyAI-Open-v0",
    "OpenRedDoor": "BabyAI-OpenRedDoor-v0",
    "OpenDoor": "BabyAI-OpenDoor-v0",
    "OpenDoorDebug": "BabyAI-OpenDoorDebug-v0",
    "OpenDoorColor": "BabyAI-OpenDoorColor-v0",
    "OpenDoorLoc": "BabyAI-OpenDoorLoc-v0",
    "OpenTwoDoors": "BabyAI-OpenTwoDoors-v0",
    "OpenRedBlueDoors": "BabyAI-OpenRedBlueDoors-v0",
    "OpenRedBlueDoorsDebug": "BabyAI-OpenRedBlueDoorsDebug-v0",
    "OpenDoorsOrderN2": "BabyAI-OpenDoorsOrderN2-v0",
    "OpenDoorsOrderN4": "BabyAI-OpenDoorsOrderN4-v0",
    "OpenDoorsOrderN2Debug": "BabyAI-OpenDoorsOrderN2Debug-v0",
    "OpenDoorsOrderN4Debug": "BabyAI-OpenDoorsOrderN4Debug-v0",
    "Pickup": "BabyAI-Pickup-v0",
    "UnblockPickup": "BabyAI-UnblockPickup-v0",
    "PickupLoc": "BabyAI-PickupLoc-v0",
    "PickupDist": "BabyAI-PickupDist-v0",
    "PickupDistDebug": "BabyAI-PickupDistDebug-v0",
    "PickupAbove": "BabyAI-PickupAbove-v0",
    "PutNextLocal": "BabyAI-PutNextLocal-v0",
    "PutNextLocalS5N3": "BabyAI-PutNextLocalS5N3-v0",
    "PutNextLocalS6N4": "BabyAI-PutNextLocalS6N4-v0",
    "PutNextS4N1": "BabyAI-PutNextS4N1-v0",
    "PutNextS5N2": "BabyAI-PutNextS5N2-v0",
    "PutNextS5N1": "BabyAI-PutNextS5N1-v0",
    "PutNextS6N3": "BabyAI-PutNextS6N3-v0",
    "PutNextS7N4": "BabyAI-PutNextS7N4-v0",
    "PutNextS5N2Carrying": "BabyAI-PutNextS5N2Carrying-v0",
    "PutNextS6N3Carrying": "BabyAI-PutNextS6N3Carrying-v0",
    "PutNextS7N4Carrying": "BabyAI-PutNextS7N4Carrying-v0",
    "Unlock": "BabyAI-Unlock-v0",
    "UnlockLocal": "BabyAI-UnlockLocal-v0",
    "UnlockLocalDist": "BabyAI-UnlockLocalDist-v0",
    "KeyInBox": "BabyAI-KeyInBox-v0",
    "UnlockPickup": "BabyAI-UnlockPickup-v0",
    "UnlockPickupDist": "BabyAI-UnlockPickupDist-v0",
    "BlockedUnlockPickup": "BabyAI-BlockedUnlockPickup-v0",
    "UnlockToUnlock": "BabyAI-UnlockToUnlock-v0",
    "ActionObjDoor": "BabyAI-ActionObjDoor-v0",
    "FindObjS5": "BabyAI-FindObjS5-v0",
    "FindObjS6": "BabyAI-FindObjS6-v0",
    "FindObjS7": "BabyAI-FindObjS7-v0",
    "KeyCorridor": "BabyAI-KeyCorridor-v0",
    "KeyCorridorS3R1": "BabyAI-KeyCorridorS3R1-v0",
    "KeyCorridorS3R2": "BabyAI-KeyCorridorS3R2-v0",
    "KeyCorridorS3R3": "BabyAI-KeyCorridorS3R3-v0",
    "KeyCorridorS4R3": "BabyAI-KeyCorridorS4R3-v0",
    "KeyCorridorS5R3": "BabyAI-KeyCorridorS5R3-v0",
    "KeyCorridorS6R3": "BabyAI-KeyCorridorS6R3-v0",
    "OneRoomS8": "BabyAI-OneRoomS8-v0",
    "OneRoomS12": "BabyAI-OneRoomS12-v0",
    "OneRoomS16": "BabyAI-OneRoomS16-v0",
    "OneRoomS20": "BabyAI-OneRoomS20-v0",
    "MoveTwoAcrossS5N2": "BabyAI-MoveTwoAcrossS5N2-v0",
    "MoveTwoAcrossS8N9": "BabyAI-MoveTwoAcrossS8N9-v0",
    "Synth": "BabyAI-Synth-v0",
    "SynthS5R2": "BabyAI-SynthS5R2-v0",
    "SynthLoc": "BabyAI-SynthLoc-v0",
    "SynthSeq": "BabyAI-SynthSeq-v0",
    "MiniBossLevel": "BabyAI-MiniBossLevel-v0",
    "BossLevel": "BabyAI-BossLevel-v0",
    "BossLevelNoUnlock": "BabyAI-BossLevelNoUnlock-v0",
}

#: GLAM's levels (``glam_levels.py``).
GLAM_LEVELS: tuple[str, ...] = (
    "MixedTrainLocal",
    "MixedTestLocal",
    "PickUpSeqGoToLocal",
    "PickUpThenGoToLocal",
    "GoToAfterPickUpLocal",
    "PickUpSeqPickUpLocal",
)


def _bkrl(kind: str, room_size: int, num_dists: int, **targets: Any) -> dict[str, Any]:
    return {"kind": kind, "room_size": room_size, "num_dists": num_dists, **targets}


#: background-knowledge-rl's levels (``bkrl_levels.py``): level name -> level class key and kwargs.
BKRL_LEVELS: dict[str, dict[str, Any]] = {
    "GoToLocal-Pretraining-S20": _bkrl("goto_pretraining", 20, 7),
    "GoToLocal-RedBall-S20": _bkrl("goto", 20, 7, target=("ball", "red")),
    "GoToLocal-PurpleBall-S20": _bkrl("goto", 20, 7, target=("ball", "purple")),
    "GoToLocal-RedKey-S20": _bkrl("goto", 20, 7, target=("key", "red")),
    "GoToLocal-PurpleKey-S20": _bkrl("goto", 20, 7, target=("key", "purple")),
    **{
        f"GoToLocal-{name}-S{size}": _bkrl("goto", size, dists, target=target)
        for size, dists in ((23, 12), (25, 15), (28, 20), (30, 25))
        for name, target in (("RedBall", ("ball", "red")), ("PurpleKey", ("key", "purple")))
    },
    "GoTo-RedBallBlueBox-S20": _bkrl("goto_sequence", 20, 7, first=("ball", "red"), second=("box", "blue")),
    # the original's quirk, kept: a purple ball then a purple box, whatever the name says
    "GoTo-PurpleBallGreenKey-S20": _bkrl("goto_sequence", 20, 7, first=("ball", "purple"), second=("box", "purple")),
    "PickUp-RedBall-S20": _bkrl("pickup", 20, 8, target=("ball", "red")),
    "PickUp-PurpleKey-S20": _bkrl("pickup", 20, 8, target=("key", "purple")),
}

LEVEL_NAMES: tuple[str, ...] = (*MINIGRID_LEVELS, *GLAM_LEVELS, *BKRL_LEVELS)


def env_id(level: str) -> str:
    return f"BabyAI-Text-{level}-v0"


def _summary(level: str) -> str:
    if level in GLAM_LEVELS:
        return f"GLAM's {level} on minigrid, with GLAM's captions"
    if level in BKRL_LEVELS:
        return f"background-knowledge-rl's {level}, with GLAM's captions"
    return f"minigrid's {MINIGRID_LEVELS[level]}, with GLAM's captions"


ENV_ENTRIES: tuple[EnvEntry, ...] = tuple(
    EnvEntry(
        id=env_id(level),
        entry_point=ENTRY_POINT,
        family=FAMILY,
        kwargs={"level": level},
        requires=("minigrid",),
        extra="babyai",
        summary=_summary(level),
    )
    for level in LEVEL_NAMES
)
