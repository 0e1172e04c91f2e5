# SPDX-License-Identifier: BSD-3-Clause
# The Celery recipe of docs/python.md ("Celery beat: one run per tick"), as test_celery.py runs it:
# two workers, each with its own embedded beat (-B), so that every tick's task is sent twice, and
# the lock lets one of them run it. Configured from the environment that test_celery.py sets.
import os
import time

import redis
from celery import Celery

import redlock

PERIOD = float(os.environ["RLTEST_PERIOD"])           # seconds between ticks
LOCK_NODES = os.environ["RLTEST_LOCK_NODES"].split()  # the Redlock nodes
RESULTS = redis.Redis.from_url(os.environ["RLTEST_RESULTS"])  # where runs and skips are recorded
WORKER = os.environ["RLTEST_WORKER"]

app = Celery("tasks", broker=os.environ["RLTEST_BROKER"])
app.conf.beat_schedule = {"report": {"task": "tasks.report", "schedule": PERIOD}}
app.conf.broker_connection_retry_on_startup = True

locks = redlock.Redlock(LOCK_NODES)  # usable in prefork children too (docs/python.md, Fork)


@locks.synchronized(lambda tick: f"celery:report:{tick}", blocking=False,
                    ttl=PERIOD, min_hold=PERIOD, on_skip=lambda tick: RESULTS.rpush("rltest:skips", f"{tick} {WORKER}"))
def report_once(tick):
    """The job: run at most once per tick, whichever worker gets there first."""
    RESULTS.rpush("rltest:runs", f"{tick} {WORKER}")


@app.task
def report():
    # The tick: the period since the epoch in which the task runs. Every beat's send within
    # one period asks for the same lock; the first takes it and keeps it for the period.
    report_once(int(time.time() // PERIOD))
