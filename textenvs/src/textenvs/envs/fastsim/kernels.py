"""libfastsim's physics as scalar kernels: kinematics, pixel-wise collision, supercover lasers.

Written from libfastsim's described behaviour (see docs/fastsim.md) in float32 where the C++ uses
``float``. Where the C++ calls the double-precision ``cos``/``sin``/``atan2`` on a float, the kernels do
the same in float64 and round the result to float32; ``cosf`` is emulated the same way (float64 cosine
rounded to float32 is what a correctly rounded ``cosf`` returns).

Every function is plain Python that numba can compile: with numba installed, ``jit`` compiles them
(the batched stepper then runs at about a million robot-steps per second on one core); without it they
run as they are, slower but with identical results. Every literal is wrapped in ``F32`` because numba, unlike NumPy,
promotes ``float32 op python-float`` to float64.
"""

from __future__ import annotations

import math

import numpy as np

from textenvs.core.jit import HAVE_NUMBA, jit  # noqa: F401  (HAVE_NUMBA: read by the tests and benchmarks)

F32 = np.float32
F64 = np.float64
PI = math.pi
HALF_PI = math.pi / 2.0
TWO_PI = 2.0 * math.pi
THREE_PI = 3.0 * math.pi


@jit
def real_to_pixel(value, fx):
    """``(int) roundf(value * fx)``: float32 product, rounded half away from zero."""
    scaled = F64(value * fx)
    rounded = math.floor(abs(scaled) + 0.5)
    return rounded if scaled >= 0.0 else -rounded


@jit
def normalize_angle_f32(angle):
    """libfastsim's ``normalize_angle<float>``: into [-pi, pi] by steps of 2 pi done in double.

    Past +-3 pi (only a heading set from outside: the physics turns by less than pi per step) the angle is
    first reduced in one go, as ``atan2(sin, cos)`` (exact argument reduction): the C++ loop would take
    |angle| / 2 pi steps, and from 2**27 on never ends (a float32 step there is wider than 2 pi).
    """
    if abs(angle) > THREE_PI:
        angle = F32(math.atan2(math.sin(F64(angle)), math.cos(F64(angle))))
    while angle > PI:
        angle = F32(F64(angle) - TWO_PI)
    while angle < -PI:
        angle = F32(F64(angle) + TWO_PI)
    return angle


@jit
def normalize_angle_f64(angle):
    while angle > PI:
        angle -= TWO_PI
    while angle < -PI:
        angle += TWO_PI
    return angle


@jit
def move_pose(x, y, theta, d_left, d_right, wheels_dist):
    """The differential-drive pose after moving the wheels by ``d_left`` and ``d_right``."""
    alpha = F32((d_right - d_left) / wheels_dist)
    if abs(alpha) > 1e-10:
        radius = F32(d_left / alpha + wheels_dist / F32(2.0))
        local_x = F32((math.cos(F64(alpha)) - 1.0) * F64(radius))
        local_y = F32(math.sin(F64(alpha)) * F64(radius))
        rotation = F64(F32(F64(theta) - HALF_PI))
        cos_r = math.cos(rotation)
        sin_r = math.sin(rotation)
        dx = F32(cos_r * F64(local_x) - sin_r * F64(local_y))
        dy = F32(cos_r * F64(local_y) + sin_r * F64(local_x))
        turn = normalize_angle_f32(alpha)
    else:
        dx = F32(F64(d_left) * math.cos(F64(theta)))
        dy = F32(F64(d_left) * math.sin(F64(theta)))
        turn = F32(0.0)
    return F32(dx + x), F32(dy + y), normalize_angle_f32(F32(turn + theta))


@jit
def body_pixel(pixels, width, i, j):
    """libfastsim's ``get_pixel`` as the collision check uses it: out-of-range indices read the last pixel."""
    index = j * width + i
    if index < 0 or index >= pixels.shape[0]:
        index = pixels.shape[0] - 1
    return pixels[index]


@jit
def check_collision(pixels, width, fx, x, y, theta, radius):
    """Pixel-wise disc collision: ``(collided, left_bumper, right_bumper)`` for the pose (x, y, theta).

    Tests the obstacle pixels of the robot's bounding box within ``rp = real_to_pixel(radius)`` of the
    centre pixel; each one presses the right (0 < a < pi/2) or left (-pi/2 < a < 0) bumper, where ``a`` is
    its bearing from the robot's heading.
    """
    rp = real_to_pixel(radius, fx)
    cx = real_to_pixel(x, fx)
    cy = real_to_pixel(y, fx)
    box_x = F32(F32(x - radius) - F32(4.0))
    box_y = F32(F32(y - radius) - F32(4.0))
    box_size = F32(radius * F32(2.0) + F32(8.0))
    i_end = min(real_to_pixel(F32(box_x + box_size), fx), cx + rp + 1)
    j_end = min(real_to_pixel(F32(box_y + box_size), fx), cy + rp + 1)
    i_start = max(real_to_pixel(box_x, fx), cx - rp)
    j_start = max(real_to_pixel(box_y, fx), cy - rp)
    collided = False
    left = False
    right = False
    for i in range(i_start, i_end):
        for j in range(j_start, j_end):
            di = i - cx
            dj = j - cy
            if di * di + dj * dj <= rp * rp and body_pixel(pixels, width, i, j) != 0:
                collided = True
                bearing = normalize_angle_f64(math.atan2(F64(dj), F64(di)) - F64(theta))
                if 0.0 < bearing < HALF_PI:
                    right = True
                if -HALF_PI < bearing < 0.0:
                    left = True
    return collided, left, right


@jit
def ray_pixel_blocked(pixels, width, a, b):
    """libfastsim's ``_try_pixel``: outside the map counts as an obstacle."""
    if a < 0 or b < 0 or a >= width or b >= width:
        return True
    return pixels[b * width + a] != 0


@jit
def free_room(room, width, a, b):
    """How many pixels in every direction (Chebyshev) around pixel (a, b) are surely free: 0 on an
    obstacle or outside the map."""
    if a < 0 or b < 0 or a >= width or b >= width:
        return 0
    return room[b * width + a]


@jit
def trace_ray(pixels, room, width, a1, b1, a2, b2):
    """Walk the supercover line from pixel (a1, b1) to (a2, b2); ``(hit, a, b)`` at the first obstacle.

    Bresenham along the major axis (the vertical one on ties); when the minor coordinate steps, the
    side pixel(s) crossed are tested too (both at an exact corner). The reported pixel is the line's own
    pixel at the step where an obstacle was met. A blocked start pixel counts at the first step.

    ``room`` (see ``free_room``) only makes it faster: every pixel the next ``k`` steps test lies within
    Chebyshev distance ``k`` of the current one, so when ``room`` says they are free the walk jumps there,
    advancing Bresenham's error term in closed form. An all-zero ``room`` gives the plain walk.
    """
    a_step = -1 if a2 < a1 else 1
    b_step = -1 if b2 < b1 else 1
    da = abs(a2 - a1)
    db = abs(b2 - b1)
    hit = ray_pixel_blocked(pixels, width, a1, b1)
    a = a1
    b = b1
    if db >= da:
        error = db
        previous = db
        done = 0
        while done < db:
            jump = min(free_room(room, width, a, b) - 1, db - done)
            if jump > 0:
                total = error + jump * 2 * da
                minor = (total - 1) // (2 * db)  # error stays in (0, 2 db]: one minor step per overflow
                a += minor * a_step
                b += jump * b_step
                error = total - minor * 2 * db
                previous = error
                done += jump
                continue
            done += 1
            b += b_step
            error += 2 * da
            if error > 2 * db:
                a += a_step
                error -= 2 * db
                if error + previous < 2 * db:
                    hit = hit or ray_pixel_blocked(pixels, width, a - a_step, b)
                elif error + previous > 2 * db:
                    hit = hit or ray_pixel_blocked(pixels, width, a, b - b_step)
                else:
                    hit = hit or ray_pixel_blocked(pixels, width, a - a_step, b)
                    hit = hit or ray_pixel_blocked(pixels, width, a, b - b_step)
            hit = hit or ray_pixel_blocked(pixels, width, a, b)
            previous = error
            if hit:
                return True, a, b
    else:
        error = da
        previous = da
        done = 0
        while done < da:
            jump = min(free_room(room, width, a, b) - 1, da - done)
            if jump > 0:
                total = error + jump * 2 * db
                minor = (total - 1) // (2 * da)
                b += minor * b_step
                a += jump * a_step
                error = total - minor * 2 * da
                previous = error
                done += jump
                continue
            done += 1
            a += a_step
            error += 2 * db
            if error > 2 * da:
                b += b_step
                error -= 2 * da
                if error + previous < 2 * da:
                    hit = hit or ray_pixel_blocked(pixels, width, a, b - b_step)
                elif error + previous > 2 * da:
                    hit = hit or ray_pixel_blocked(pixels, width, a - a_step, b)
                else:
                    hit = hit or ray_pixel_blocked(pixels, width, a, b - b_step)
                    hit = hit or ray_pixel_blocked(pixels, width, a - a_step, b)
            hit = hit or ray_pixel_blocked(pixels, width, a, b)
            previous = error
            if hit:
                return True, a, b
    return False, a2, b2


@jit
def laser_distance(pixels, room, width, fx, x, y, theta, angle, laser_range):
    """Distance from (x, y) to the corner of the first obstacle pixel on the laser's ray, or -1."""
    direction = F32(angle + theta)
    end_x = F32(F32(F32(math.cos(F64(direction))) * laser_range) + x)
    end_y = F32(F32(F32(math.sin(F64(direction))) * laser_range) + y)
    hit, a, b = trace_ray(
        pixels,
        room,
        width,
        real_to_pixel(x, fx),
        real_to_pixel(y, fx),
        real_to_pixel(end_x, fx),
        real_to_pixel(end_y, fx),
    )
    if not hit:
        return F32(-1.0)
    dx = F32(x - F32(F32(a) / fx))
    dy = F32(y - F32(F32(b) / fx))
    return F32(math.sqrt(F64(F32(dx * dx + dy * dy))))


@jit
def wheel_speed(action, max_speed, decimals):
    """fastsim_gym's wheel command: non-finite => 0, clipped to +-max_speed, then rounded to ``decimals``
    (``decimals < 0``: not rounded; the paper's household env rounds to 0.1) and passed on as float."""
    if not math.isfinite(action):
        return F32(0.0) if math.isnan(action) else F32(math.copysign(max_speed, action))
    speed = min(max(action, -max_speed), max_speed)
    if decimals >= 0:
        scale = 10.0**decimals
        speed = round(speed * scale) / scale  # NumPy's round: half to even on the scaled value
    return F32(speed)


@jit
def step_robots(maps, config, values, flags, actions, rows):
    """Move the robots ``rows`` by their wheel speeds ``actions`` and update their sensors, in place.

    Arguments are packed because every argument costs time at each call from Python. ``maps``: int64[2,
    width * width], the world's flat pixels and free room (see ``simulator.World``); ``config``: float64
    (map width in pixels, fx, robot radius, laser range, sticky walls, max speed, rounding decimals or -1,
    then the laser angles: float32 radians); ``values``: float32[n, 3 + n_lasers + n_lasers + 2], per robot
    its state (x, y, theta), lasers (-1 = no hit) and fastsim_gym's observation (lasers with -1 => range,
    clipped to [0, range], then the bumpers); ``flags``: bool[n, 4] (left bumper, right bumper, collision
    since reset, collided this step); ``actions``: float64[n, 2] (left, right).
    """
    pixels = maps[0]
    room = maps[1]
    width = int(config[0])
    fx = F32(config[1])
    radius = F32(config[2])
    laser_range = F32(config[3])
    sticky_walls = config[4] != 0.0
    max_speed = config[5]
    decimals = int(config[6])
    n_lasers = config.shape[0] - 7
    wheels_dist = F32(radius * F32(2.0))
    obs = 3 + n_lasers  # the column of the observation's first value
    for r in rows:
        x = values[r, 0]
        y = values[r, 1]
        theta = values[r, 2]
        d_left = wheel_speed(actions[r, 0], max_speed, decimals)
        d_right = wheel_speed(actions[r, 1], max_speed, decimals)
        new_x, new_y, new_theta = move_pose(x, y, theta, d_left, d_right, wheels_dist)
        collided, left, right = check_collision(pixels, width, fx, new_x, new_y, new_theta, radius)
        if collided:
            new_x = x
            new_y = y
            if sticky_walls:
                new_theta = theta
            flags[r, 2] = True
        values[r, 0] = new_x
        values[r, 1] = new_y
        values[r, 2] = new_theta
        flags[r, 0] = left
        flags[r, 1] = right
        flags[r, 3] = collided
        for k in range(n_lasers):
            angle = F32(config[7 + k])
            distance = laser_distance(pixels, room, width, fx, new_x, new_y, new_theta, angle, laser_range)
            values[r, 3 + k] = distance
            values[r, obs + k] = laser_range if distance < 0 else min(distance, laser_range)
        values[r, obs + n_lasers] = F32(1.0) if left else F32(0.0)
        values[r, obs + n_lasers + 1] = F32(1.0) if right else F32(0.0)
