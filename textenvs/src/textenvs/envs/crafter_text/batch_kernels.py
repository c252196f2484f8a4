"""The batched game's numba kernels: crafter 1.8.3's ``objects.py`` and ``Env.step`` over arrays of worlds.

Every kernel takes the world index ``w``; ``s`` is the tuple of object and chunk arrays (positions ``KINDS`` ...
``CHUNK_SEEN`` in ``batch_rules``) and ``mt``/``mt_pos`` each world's MT19937 state. See ``batched.py`` for the
state and for the quirks of crafter kept here.
"""

from __future__ import annotations

import numpy as np

from textenvs.core.jit import jit
from textenvs.envs.crafter_text.batch_rules import (
    ARROW,
    BALANCE_DESPAWN_DIST,
    BALANCE_DESPAWN_P,
    BALANCE_EVERY,
    BALANCE_GROUND,
    BALANCE_KIND,
    BALANCE_SPAWN_DIST,
    BALANCE_SPAWN_P,
    CHUNK,
    CHUNK_COUNT,
    CHUNK_ORDER,
    CHUNK_SEEN,
    CHUNKS_PER_SIDE,
    COLLECT_ACHIEVEMENT,
    COLLECT_LEAVES,
    COLLECT_PROBABILITY,
    COLLECT_RECEIVE,
    COLLECT_REQUIRE,
    COLLECT_REQUIRE_COUNT,
    COUNT,
    COUNTERS,
    COW,
    DEFEAT_SKELETON,
    DEFEAT_ZOMBIE,
    DO,
    DRINK,
    DXS,
    DYS,
    EAT_COW,
    EAT_PLANT,
    ENERGY,
    FIRST_MAKE,
    FIRST_PLACE,
    FOOD,
    FURNACE,
    HEALTH,
    HEALTHS,
    INITIAL_HEALTH,
    IRON_SWORD,
    ITEM_MAX,
    KINDS,
    LAVA,
    MAKE_ACHIEVEMENT,
    MAKE_GIVES,
    MAKE_ITEM,
    MAKE_NEARBY,
    MAKE_USES,
    MOVES,
    NUM_CHUNKS,
    NUM_MATERIALS,
    OBJ_MAP,
    PATH,
    PLACE_ACHIEVEMENT,
    PLACE_MATERIAL,
    PLACE_USES,
    PLACE_WHERE,
    PLANT,
    PLAYER,
    REMOVED,
    SEMANTIC_OFFSET,
    SKELETON,
    SLEEP,
    STONE_SWORD,
    TABLE,
    UPDATE_DISTANCE,
    WAKE_UP,
    WALK_ARROW,
    WALK_CREATURE,
    WALK_PLAYER,
    WALKABLE,
    WATER,
    WOOD_SWORD,
    XS,
    YS,
    ZOMBIE,
)


# ----------------------------------------------------------------------------------- MT19937 (RandomState)
@jit
def _twist(mt, w):
    for i in range(624):
        y = (np.int64(mt[w, i]) & 0x80000000) | (np.int64(mt[w, (i + 1) % 624]) & 0x7FFFFFFF)
        value = np.int64(mt[w, (i + 397) % 624]) ^ (y >> 1)
        if y & 1:
            value ^= 0x9908B0DF
        mt[w, i] = value


@jit
def _next32(mt, mt_pos, w):
    if mt_pos[w] >= 624:
        _twist(mt, w)
        mt_pos[w] = 0
    y = np.int64(mt[w, mt_pos[w]])
    mt_pos[w] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y & 0xFFFFFFFF


@jit
def _uniform(mt, mt_pos, w):
    """``RandomState.uniform()``: 53 bits from two draws."""
    a = _next32(mt, mt_pos, w) >> 5
    b = _next32(mt, mt_pos, w) >> 6
    return (a * 67108864.0 + b) / 9007199254740992.0


@jit
def _randint(mt, mt_pos, w, n):
    """``RandomState.randint(0, n)``: masked rejection sampling; no draw when ``n == 1``."""
    top = n - 1
    if top == 0:
        return 0
    mask = top
    mask |= mask >> 1
    mask |= mask >> 2
    mask |= mask >> 4
    mask |= mask >> 8
    mask |= mask >> 16
    while True:
        value = _next32(mt, mt_pos, w) & mask
        if value <= top:
            return value


# ----------------------------------------------------------------------------------- the world
@jit
def _material(mat, w, x, y):
    if 0 <= x < mat.shape[1] and 0 <= y < mat.shape[2]:
        return np.int64(mat[w, x, y])
    return 0


@jit
def _object_at(obj_map, w, x, y):
    if 0 <= x < obj_map.shape[1] and 0 <= y < obj_map.shape[2]:
        return np.int64(obj_map[w, x, y])
    return 0


@jit
def _chunk_of(x, y):
    return (x // CHUNK) * CHUNKS_PER_SIDE + y // CHUNK


@jit
def _occupy_chunk(chunk_order, chunk_count, chunk_seen, w, chunk):
    if not chunk_seen[w, chunk]:
        chunk_seen[w, chunk] = True
        chunk_order[w, chunk_count[w]] = chunk
        chunk_count[w] += 1


@jit
def _add_object(s, w, kind, x, y, dx, dy):
    kinds, xs, ys, healths, counters, dxs, dys, removed = s[:8]
    count, obj_map, chunk_order, chunk_count, chunk_seen = s[8:]
    i = count[w]
    count[w] += 1
    kinds[w, i] = kind
    xs[w, i], ys[w, i] = x, y
    healths[w, i] = INITIAL_HEALTH[kind]
    counters[w, i] = 0
    dxs[w, i], dys[w, i] = dx, dy
    removed[w, i] = False
    obj_map[w, x, y] = i
    _occupy_chunk(chunk_order, chunk_count, chunk_seen, w, _chunk_of(x, y))


@jit
def _remove_object(s, w, i):
    if s[REMOVED][w, i]:
        return
    s[OBJ_MAP][w, s[XS][w, i], s[YS][w, i]] = 0
    s[REMOVED][w, i] = True


@jit
def _is_free(mat, s, w, x, y, walk):
    return _object_at(s[OBJ_MAP], w, x, y) == 0 and WALKABLE[walk, _material(mat, w, x, y)]


@jit
def _move(mat, s, w, i, dx, dy, walk):
    """``Object.move``: True when the target is free, even for a removed object (which stays put)."""
    xs, ys, obj_map = s[XS], s[YS], s[OBJ_MAP]
    x, y = np.int64(xs[w, i]) + dx, np.int64(ys[w, i]) + dy
    if not _is_free(mat, s, w, x, y, walk):
        return False
    if not s[REMOVED][w, i]:
        old_x, old_y = np.int64(xs[w, i]), np.int64(ys[w, i])
        obj_map[w, x, y] = i
        obj_map[w, old_x, old_y] = 0
        if _chunk_of(old_x, old_y) != _chunk_of(x, y):
            _occupy_chunk(s[CHUNK_ORDER], s[CHUNK_COUNT], s[CHUNK_SEEN], w, _chunk_of(x, y))
        xs[w, i], ys[w, i] = x, y
    return True


@jit
def _sign(v):
    return 1 if v > 0 else (-1 if v < 0 else 0)


@jit
def _toward(s, w, i, long_axis):
    xs, ys = s[XS], s[YS]
    ox, oy = np.int64(xs[w, 1]) - xs[w, i], np.int64(ys[w, 1]) - ys[w, i]
    if (abs(ox) > abs(oy)) if long_axis else (abs(ox) <= abs(oy)):
        return _sign(ox), 0
    return 0, _sign(oy)


@jit
def _random_dir(mt, mt_pos, w):
    k = _randint(mt, mt_pos, w, 4)
    return MOVES[k + 1, 0], MOVES[k + 1, 1]


@jit
def _player_distance(s, w, x, y):
    return abs(np.int64(s[XS][w, 1]) - x) + abs(np.int64(s[YS][w, 1]) - y)


@jit
def _damage(s, inventory, w, i, amount):
    if s[KINDS][w, i] == PLAYER:
        inventory[w, HEALTH] = max(0, inventory[w, HEALTH] - amount)
    else:
        s[HEALTHS][w, i] = max(0, s[HEALTHS][w, i] - amount)


# ----------------------------------------------------------------------------------- creatures
@jit
def _update_cow(mat, s, mt, mt_pos, w, i):
    if s[HEALTHS][w, i] <= 0:
        _remove_object(s, w, i)
    if _uniform(mt, mt_pos, w) < 0.5:
        dx, dy = _random_dir(mt, mt_pos, w)
        _move(mat, s, w, i, dx, dy, WALK_CREATURE)


@jit
def _update_zombie(mat, s, mt, mt_pos, inventory, sleeping, w, i):
    xs, ys, counters = s[XS], s[YS], s[COUNTERS]
    if s[HEALTHS][w, i] <= 0:
        _remove_object(s, w, i)
    dist = _player_distance(s, w, xs[w, i], ys[w, i])
    if dist <= 8 and _uniform(mt, mt_pos, w) < 0.9:
        dx, dy = _toward(s, w, i, _uniform(mt, mt_pos, w) < 0.8)
    else:
        dx, dy = _random_dir(mt, mt_pos, w)
    _move(mat, s, w, i, dx, dy, WALK_CREATURE)
    dist = _player_distance(s, w, xs[w, i], ys[w, i])
    if dist <= 1:
        if counters[w, i]:
            counters[w, i] -= 1
        else:
            _damage(s, inventory, w, 1, 7 if sleeping[w] else 2)  # object 1 is the player
            counters[w, i] = 5


@jit
def _update_skeleton(mat, s, mt, mt_pos, w, i):
    xs, ys, counters = s[XS], s[YS], s[COUNTERS]
    if s[HEALTHS][w, i] <= 0:
        _remove_object(s, w, i)
    counters[w, i] = max(0, counters[w, i] - 1)
    dist = _player_distance(s, w, xs[w, i], ys[w, i])
    if dist <= 3:
        dx, dy = _toward(s, w, i, _uniform(mt, mt_pos, w) < 0.6)
        if _move(mat, s, w, i, -dx, -dy, WALK_CREATURE):
            return
    if dist <= 5 and _uniform(mt, mt_pos, w) < 0.5:
        dx, dy = _toward(s, w, i, True)
        if counters[w, i] > 0 or (dx == 0 and dy == 0):
            return
        x, y = np.int64(xs[w, i]) + dx, np.int64(ys[w, i]) + dy
        if _is_free(mat, s, w, x, y, WALK_ARROW):
            _add_object(s, w, ARROW, x, y, dx, dy)
            counters[w, i] = 4
    elif dist <= 8 and _uniform(mt, mt_pos, w) < 0.3:
        dx, dy = _toward(s, w, i, _uniform(mt, mt_pos, w) < 0.6)
        _move(mat, s, w, i, dx, dy, WALK_CREATURE)
    elif _uniform(mt, mt_pos, w) < 0.2:
        dx, dy = _random_dir(mt, mt_pos, w)
        _move(mat, s, w, i, dx, dy, WALK_CREATURE)


@jit
def _update_arrow(mat, s, inventory, w, i):
    xs, ys, dxs, dys, obj_map = s[XS], s[YS], s[DXS], s[DYS], s[OBJ_MAP]
    x, y = np.int64(xs[w, i]) + dxs[w, i], np.int64(ys[w, i]) + dys[w, i]
    material, target = _material(mat, w, x, y), _object_at(obj_map, w, x, y)
    if target:
        _damage(s, inventory, w, target, 2)
        _remove_object(s, w, i)
    elif not WALKABLE[WALK_ARROW, material]:
        _remove_object(s, w, i)
        if material in (TABLE, FURNACE):
            mat[w, x, y] = PATH
    else:
        _move(mat, s, w, i, dxs[w, i], dys[w, i], WALK_ARROW)


@jit
def _update_plant(s, w, i):
    kinds, xs, ys, healths, counters, obj_map = s[KINDS], s[XS], s[YS], s[HEALTHS], s[COUNTERS], s[OBJ_MAP]
    counters[w, i] += 1
    hurt = False
    for k in range(1, 5):
        other = _object_at(obj_map, w, np.int64(xs[w, i]) + MOVES[k, 0], np.int64(ys[w, i]) + MOVES[k, 1])
        if other and kinds[w, other] in (ZOMBIE, SKELETON, COW):
            hurt = True
    if hurt:
        healths[w, i] = max(0, healths[w, i] - 1)
    if healths[w, i] <= 0:
        _remove_object(s, w, i)


# ----------------------------------------------------------------------------------- the player
@jit
def _update_player(mat, s, mt, mt_pos, player, inventory, achievements, w, action):
    facing, sleeping, life, own_last_health = player
    kinds, xs, ys, healths, counters, obj_map = s[KINDS], s[XS], s[YS], s[HEALTHS], s[COUNTERS], s[OBJ_MAP]
    px, py = np.int64(xs[w, 1]), np.int64(ys[w, 1])
    tx, ty = px + facing[w, 0], py + facing[w, 1]
    material, target = _material(mat, w, tx, ty), _object_at(obj_map, w, tx, ty)
    if sleeping[w]:
        if inventory[w, ENERGY] < ITEM_MAX[ENERGY]:
            action = SLEEP
        else:
            sleeping[w] = False
            achievements[w, WAKE_UP] += 1
    if 1 <= action <= 4:
        facing[w, 0], facing[w, 1] = MOVES[action, 0], MOVES[action, 1]
        _move(mat, s, w, 1, MOVES[action, 0], MOVES[action, 1], WALK_PLAYER)
        if mat[w, xs[w, 1], ys[w, 1]] == LAVA:
            inventory[w, HEALTH] = 0
    elif action == DO and target:
        damage = max(
            1,
            2 if inventory[w, WOOD_SWORD] else 0,
            3 if inventory[w, STONE_SWORD] else 0,
            5 if inventory[w, IRON_SWORD] else 0,
        )
        kind = kinds[w, target]
        if kind == PLANT:
            if counters[w, target] > 300:
                counters[w, target] = 0
                inventory[w, FOOD] += 4
                achievements[w, EAT_PLANT] += 1
        elif kind in (ZOMBIE, SKELETON, COW):
            _damage(s, inventory, w, target, damage)
            if healths[w, target] <= 0:
                if kind == ZOMBIE:
                    achievements[w, DEFEAT_ZOMBIE] += 1
                elif kind == SKELETON:
                    achievements[w, DEFEAT_SKELETON] += 1
                else:
                    inventory[w, FOOD] += 6
                    achievements[w, EAT_COW] += 1
                    life[w, 0] = 0.0
    elif action == DO:
        if material == WATER:
            life[w, 1] = 0.0
        receive = COLLECT_RECEIVE[material]
        require = COLLECT_REQUIRE[material]
        if receive >= 0 and (require < 0 or inventory[w, require] >= COLLECT_REQUIRE_COUNT[material]):
            mat[w, tx, ty] = COLLECT_LEAVES[material]
            if _uniform(mt, mt_pos, w) <= COLLECT_PROBABILITY[material]:
                inventory[w, receive] += 1
                achievements[w, COLLECT_ACHIEVEMENT[material]] += 1
    elif action == SLEEP:
        if inventory[w, ENERGY] < ITEM_MAX[ENERGY]:
            sleeping[w] = True
    elif FIRST_PLACE <= action < FIRST_MAKE:
        p = action - FIRST_PLACE
        if target == 0 and PLACE_WHERE[p, material] and np.all(inventory[w] >= PLACE_USES[p]):
            inventory[w] -= PLACE_USES[p]
            if PLACE_MATERIAL[p] >= 0:
                mat[w, tx, ty] = PLACE_MATERIAL[p]
            else:
                _add_object(s, w, PLANT, tx, ty, 0, 0)
            achievements[w, PLACE_ACHIEVEMENT[p]] += 1
    elif action >= FIRST_MAKE:
        k = action - FIRST_MAKE
        if _has_nearby(mat, w, px, py, k) and np.all(inventory[w] >= MAKE_USES[k]):
            inventory[w] -= MAKE_USES[k]
            inventory[w, MAKE_ITEM[k]] += MAKE_GIVES[k]
            achievements[w, MAKE_ACHIEVEMENT[k]] += 1
    _update_life_stats(sleeping, life, inventory, w)
    for item in range(inventory.shape[1]):
        inventory[w, item] = max(0, min(inventory[w, item], ITEM_MAX[item]))
    if inventory[w, HEALTH] < own_last_health[w]:
        sleeping[w] = False
    own_last_health[w] = inventory[w, HEALTH]


@jit
def _has_nearby(mat, w, px, py, k):
    """``World.nearby(pos, 1)`` holds every material make ``k`` needs (Python's slices: a negative start wraps)."""
    size_x, size_y = mat.shape[1], mat.shape[2]
    x0, y0 = px - 1, py - 1
    if x0 < 0:
        x0 += size_x
    if y0 < 0:
        y0 += size_y
    present = np.zeros(NUM_MATERIALS, np.bool_)
    for x in range(x0, min(px + 2, size_x)):
        for y in range(y0, min(py + 2, size_y)):
            present[mat[w, x, y]] = True
    return not np.any(MAKE_NEARBY[k] & ~present)


@jit
def _update_life_stats(sleeping, life, inventory, w):
    """``Player._update_life_stats`` then ``_degen_or_regen_health``; ``life`` = hunger, thirst, fatigue, recover."""
    asleep = sleeping[w]
    life[w, 0] += 0.5 if asleep else 1.0
    if life[w, 0] > 25:
        life[w, 0] = 0.0
        inventory[w, FOOD] -= 1
    life[w, 1] += 0.5 if asleep else 1.0
    if life[w, 1] > 20:
        life[w, 1] = 0.0
        inventory[w, DRINK] -= 1
    if asleep:
        life[w, 2] = min(life[w, 2] - 1, 0.0)
    else:
        life[w, 2] += 1
    if life[w, 2] < -10:
        life[w, 2] = 0.0
        inventory[w, ENERGY] += 1
    if life[w, 2] > 30:
        life[w, 2] = 0.0
        inventory[w, ENERGY] -= 1
    if inventory[w, FOOD] > 0 and inventory[w, DRINK] > 0 and (inventory[w, ENERGY] > 0 or asleep):
        life[w, 3] += 2.0 if asleep else 1.0
    else:
        life[w, 3] -= 0.5 if asleep else 1.0
    if life[w, 3] > 25:
        life[w, 3] = 0.0
        inventory[w, HEALTH] += 1
    if life[w, 3] < -15:
        life[w, 3] = 0.0
        inventory[w, HEALTH] = max(0, inventory[w, HEALTH] - 1)


# ----------------------------------------------------------------------------------- balance
@jit
def _balance(mat, s, mt, mt_pos, w, daylight):
    """``Env._balance_chunk`` over the occupied chunks in the order they were first occupied."""
    kinds, xs, ys, removed, count = s[KINDS], s[XS], s[YS], s[REMOVED], s[COUNT]
    chunk_order, chunk_count = s[CHUNK_ORDER], s[CHUNK_COUNT]
    creatures = np.zeros((NUM_CHUNKS, 3), np.int64)
    for i in range(1, count[w]):
        if removed[w, i]:
            continue
        for b in range(3):
            if kinds[w, i] == BALANCE_KIND[b]:
                creatures[_chunk_of(np.int64(xs[w, i]), np.int64(ys[w, i])), b] += 1
    for k in range(chunk_count[w]):
        chunk = chunk_order[w, k]
        xmin, ymin = (chunk // CHUNKS_PER_SIDE) * CHUNK, (chunk % CHUNKS_PER_SIDE) * CHUNK
        xmax, ymax = min(xmin + CHUNK, mat.shape[1]), min(ymin + CHUNK, mat.shape[2])
        for b in range(3):
            ground = BALANCE_GROUND[b]
            space = 0
            for x in range(xmin, xmax):
                for y in range(ymin, ymax):
                    if mat[w, x, y] == ground:
                        space += 1
            if b == 0:
                low, high = (0.0 if space < 50 else 3.5 - 3 * daylight), 3.5 - 3 * daylight
            elif b == 1:
                low, high = (0.0 if space < 6 else 1.0), 2.0
            else:
                low, high = (0.0 if space < 30 else 1.0), 1.5 + daylight
            number = creatures[chunk, b]
            spawn = False
            if number < int(low):
                spawn = _uniform(mt, mt_pos, w) < BALANCE_SPAWN_P[b]
            if spawn:
                cell = _randint(mt, mt_pos, w, space)
                for x in range(xmin, xmax):
                    for y in range(ymin, ymax):
                        if mat[w, x, y] == ground:
                            if cell == 0:
                                empty = _object_at(s[OBJ_MAP], w, x, y) == 0
                                if empty and _player_distance(s, w, x, y) >= BALANCE_SPAWN_DIST[b]:
                                    _add_object(s, w, BALANCE_KIND[b], x, y, 0, 0)
                            cell -= 1
            elif number > int(high) and _uniform(mt, mt_pos, w) < BALANCE_DESPAWN_P[b]:
                nth = _randint(mt, mt_pos, w, number)
                for i in range(1, count[w]):
                    if removed[w, i] or kinds[w, i] != BALANCE_KIND[b]:
                        continue
                    if _chunk_of(np.int64(xs[w, i]), np.int64(ys[w, i])) != chunk:
                        continue
                    if nth == 0:
                        if _player_distance(s, w, xs[w, i], ys[w, i]) >= BALANCE_DESPAWN_DIST[b]:
                            _remove_object(s, w, i)
                        break
                    nth -= 1


# ----------------------------------------------------------------------------------- one step
@jit
def step_worlds(actions, active, mat, s, mt, mt_pos, player, inventory, achievements, env, unlocked, daylight, out):
    """Step every world with ``active[w]``: crafter's ``Env.step``. ``env`` = steps, the env's last health;
    ``out`` = reward, dead (0/1)."""
    kinds, xs, ys, removed, count = s[KINDS], s[XS], s[YS], s[REMOVED], s[COUNT]
    for w in range(actions.shape[0]):
        if not active[w]:
            continue
        env[w, 0] += 1
        light = daylight[env[w, 0]]
        for i in range(1, count[w]):  # the objects there now, in creation order; new ones wait a step
            if removed[w, i] or _player_distance(s, w, xs[w, i], ys[w, i]) >= UPDATE_DISTANCE:
                continue
            kind = kinds[w, i]
            if kind == PLAYER:
                _update_player(mat, s, mt, mt_pos, player, inventory, achievements, w, actions[w])
            elif kind == COW:
                _update_cow(mat, s, mt, mt_pos, w, i)
            elif kind == ZOMBIE:
                _update_zombie(mat, s, mt, mt_pos, inventory, player[1], w, i)
            elif kind == SKELETON:
                _update_skeleton(mat, s, mt, mt_pos, w, i)
            elif kind == ARROW:
                _update_arrow(mat, s, inventory, w, i)
            elif kind == PLANT:
                _update_plant(s, w, i)
        if env[w, 0] % BALANCE_EVERY == 0:
            _balance(mat, s, mt, mt_pos, w, light)
        health = inventory[w, HEALTH]
        reward = (health - env[w, 1]) / 10
        env[w, 1] = health
        new = False
        for a in range(achievements.shape[1]):
            if achievements[w, a] > 0 and not unlocked[w, a]:
                unlocked[w, a] = True
                new = True
        if new:
            reward += 1.0
        out[w, 0] = reward
        out[w, 1] = 1.0 if health <= 0 else 0.0


@jit
def semantic_maps(mat, s, rows, out):
    """Crafter's semantic map of each world in ``rows``: materials, then the objects' ids."""
    kinds, xs, ys, removed, count = s[KINDS], s[XS], s[YS], s[REMOVED], s[COUNT]
    for r in range(rows.shape[0]):
        w = rows[r]
        out[r] = mat[w]
        for i in range(1, count[w]):
            if not removed[w, i]:
                out[r, xs[w, i], ys[w, i]] = SEMANTIC_OFFSET + kinds[w, i]


@jit
def compact(s, w):
    """Drop row ``w``'s removed objects, keeping the others' order (crafter's order is creation order)."""
    kinds, xs, ys, healths, counters, dxs, dys, removed, count, obj_map = s[:10]
    kept = 1
    for i in range(1, count[w]):
        if removed[w, i]:
            continue
        kinds[w, kept], xs[w, kept], ys[w, kept] = kinds[w, i], xs[w, i], ys[w, i]
        healths[w, kept], counters[w, kept] = healths[w, i], counters[w, i]
        dxs[w, kept], dys[w, kept], removed[w, kept] = dxs[w, i], dys[w, i], False
        obj_map[w, xs[w, i], ys[w, i]] = kept
        kept += 1
    count[w] = kept
