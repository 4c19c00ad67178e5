"""A mutation check of the central promises: break one on purpose, the tests must notice.

Each entry of ``MUTATIONS`` names a module by its dotted name (resolved with
``importlib.util.find_spec`` in this checkout's ``src``, so a module that moves only needs
its name updated here), an exact piece of its source, what replaces it, and the tests that
must fail once it is replaced. For each entry in turn the script writes the mutation into the
working tree, runs those tests with pytest, reports KILLED (they failed) or SURVIVED (they
passed: a promise no test holds), and always puts the file back as it was, bytes and
modification time (``try``/``finally``; Ctrl-C too). Nothing is committed, stashed or copied.

An entry whose source text is not found exactly once is an ERROR, never skipped: a refactor
that moves or rewrites the code makes the check fail loudly, and the entry is updated with it.
So is a test that cannot be collected (renamed or gone). Before the first mutation the tests
run once unmutated: they must pass, or KILLED would mean nothing (``--no-baseline`` skips it).

Run it from anywhere, with the interpreter that runs the tests (PostgreSQL entries start a
throwaway cluster, like the tests they name)::

    python3 tools/mutations.py                       # every entry
    python3 tools/mutations.py --list                # names and the promise each breaks
    python3 tools/mutations.py fence-booking-token   # some entries, by name

Exit status: 0 when every mutation was killed, 1 when one survived, 2 on an error.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
RUN_SECONDS = 900.0
"""A test run that takes longer is stopped (and counts as KILLED: the tests did not pass)."""


@dataclass(frozen=True)
class Mutation:
    name: str
    promise: str
    """What the mutation breaks, in a line."""
    module: str
    """Dotted module name (``courtier.pipeline.answers.feedback``)."""
    target: str
    """Source text found exactly once in the module."""
    replacement: str
    tests: tuple[str, ...]
    """pytest node ids, relative to the repository root."""


_SHARDS = "tests/pipeline/test_shards.py"
_CONTRACT = "tests/frontier/test_store_contract.py"
_CRAWLER = "tests/pipeline/test_crawler.py"
_POOL = "tests/pipeline/test_parse_pool.py"
_SCHEDULER = "tests/pipeline/test_scheduler.py"
_SPACING = "tests/pipeline/test_send_spacing_fast.py"
_INTAKE = "tests/pipeline/test_intake.py"

_RENDERING = "tests/pipeline/test_rendering.py"
_RENDER_E2E = "tests/e2e/test_render_e2e.py"

MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "render-third-party",
        "a render's request to a host outside the seed is aborted, never fetched",
        "courtier.pipeline.lanes.render_session",
        "        return Outside(None)\n",
        "        return self.lane\n",
        (f"{_RENDERING}::test_a_shell_is_rendered_through_booked_spaced_guarded_requests",),
    ),
    Mutation(
        "render-after-page",
        "while a page renders, its site starts no new page: the render's requests go first",
        "courtier.pipeline.lanes.pages",
        "        if render is not None or lane.rendering:\n",
        "        if render is not None:\n",
        (
            "tests/pipeline/test_scheduler.py::"
            "test_while_a_page_renders_its_site_starts_the_renders_requests_and_no_new_page",
        ),
    ),
    Mutation(
        "render-robots",
        "a render's request robots.txt disallows is aborted",
        "courtier.pipeline.lanes.render_session",
        "        if rules is None or not rules.allows(url.fetch_url, rendering.token):\n",
        "        if rules is None:\n",
        (f"{_RENDERING}::test_a_shell_is_rendered_through_booked_spaced_guarded_requests",),
    ),
    Mutation(
        "render-stall",
        "a page that stalls before loading fails then, not at its page_timeout",
        "courtier.render.page",
        "                wait = min(wait, self.stall - idle)\n",
        "",
        (
            "tests/render/test_renderer.py::"
            "test_a_page_that_stalls_before_loading_fails_at_once_one_waiting_on_us_never",
        ),
    ),
    Mutation(
        "fence-booking-token",
        "a booking fenced by an older token of the same owner is refused",
        "courtier.politeness.limiter.postgres",
        "          AND f.token = %(ftoken)s::bigint\n",
        "",
        (f"{_SHARDS}::test_a_booking_fenced_by_the_same_workers_older_token_is_refused",),
    ),
    Mutation(
        "fence-lease-token",
        "a URL lease or release fenced by an older token of the same owner is refused",
        "courtier.frontier.postgres_store",
        "AND f.owner = {owner} AND f.token = {token} FOR SHARE)",
        "AND f.owner = {owner} AND {token} IS NOT NULL FOR SHARE)",  # parameters stay bound
        (f"{_CONTRACT}::test_a_fence_with_an_older_token_of_the_same_owner_is_refused",),
    ),
    Mutation(
        "fence-lease-due-token",
        "a batch lease (lease_due) fenced by an older token of the same owner is refused",
        "courtier.frontier.postgres_store",
        "ON f.shard = h.shard AND f.owner = h.owner AND f.token = h.token",
        "ON f.shard = h.shard AND f.owner = h.owner",
        (f"{_CONTRACT}::test_a_fence_with_an_older_token_of_the_same_owner_is_refused",),
    ),
    Mutation(
        "origin-backoff-floor",
        "a run of 5xx across an origin's sites raises the origin's floor",
        "courtier.pipeline.answers.feedback",
        "            floors[key] = now + min(params.backoff.max_backoff, base)\n",
        "",
        (
            "tests/pipeline/test_feedback_origin_backoff_fast.py",
            "tests/pipeline/test_scheduler.py::"
            "test_a_run_of_5xx_across_an_origins_sites_backs_the_origin_off",
        ),
    ),
    Mutation(
        "location-unredacted",
        "a redirect's Location is redacted in documents.jsonl",
        "courtier.pipeline.answers.verdict",
        'record["location"] = redact_url(result.location).text',
        'record["location"] = result.location',
        (f"{_CRAWLER}::test_a_redirects_location_is_redacted_in_documents_jsonl",),
    ),
    Mutation(
        "cp1252-read-as-latin1",
        "a page labelled latin-1 reads bytes 0x80-0x9F as windows-1252 punctuation",
        "courtier.content.decode",
        'text = body[offset:].decode(codec, "surrogateescape")',
        'text = body[offset:].decode("latin-1" if codec == "cp1252" else codec, "surrogateescape")',
        (
            "tests/pipeline/test_reading.py::"
            "test_bytes_0x80_to_0x9f_of_a_latin1_label_read_as_windows_1252_punctuation",
        ),
    ),
    Mutation(
        "refusal-unlogged",
        "a request the SSRF guard refuses is a row of the request log",
        "courtier.pipeline.answers.fetching",
        "            self.observer.request(event)\n",
        "",
        (
            "tests/observe/test_refusals_logged.py::"
            "test_a_request_the_guard_refuses_is_a_row_of_the_request_log_with_its_refusal",
        ),
    ),
    Mutation(
        "throttled-needs-retry-after",
        "a 429/503 without Retry-After counts as throttled",
        "courtier.observe.anomaly",
        "throttled = status in THROTTLES\n",
        "throttled = status in THROTTLES and bool(row.retry_after)\n",
        (
            "tests/observe/test_anomaly.py::"
            "test_a_run_of_429_or_503_without_retry_after_is_throttled_and_no_error",
        ),
    ),
    Mutation(
        "restore-floors-off",
        "floors saved before a kill hold over the first requests after the restart",
        "courtier.pipeline.recovery",
        "    await clocks.restore(inherited.floors)\n"
        "    for key, when in inherited.floors.items():\n"
        '        lane = sites.get(key.removeprefix("site:")) if key.startswith("site:") else None\n'
        "        if lane is not None:\n"
        "            lane.hold_start(when)\n"
        "    return len(inherited.floors)\n",
        "    return len(inherited.floors)\n",
        (
            "tests/pipeline/test_recovery_fast.py",
            f"{_CRAWLER}::test_a_restart_starts_no_site_before_its_interval",
        ),
    ),
    Mutation(
        "restart-never-asks-again",
        "a restarted crawl asks its sites again once their interval is over",
        "courtier.pipeline.recovery",
        "lane.hold_start(when)\n",
        "lane.hold_start(when + 3600.0)\n",
        (f"{_CRAWLER}::test_a_restart_starts_no_site_before_its_interval",),
    ),
    Mutation(
        "no-replacement-worker",
        "a parse worker killed over its budget is replaced by a new one",
        "courtier.pipeline.workers.pool",
        "        self.timeouts += timed_out\n        self._start(worker.index)\n",
        "        self.timeouts += timed_out\n",
        (f"{_POOL}::test_a_job_over_budget_is_killed_and_the_pool_carries_on",),
    ),
    Mutation(
        "budget-counts-the-queue",
        "a parse job's budget starts when it runs, not while it waits behind another",
        "courtier.pipeline.workers.pool",
        "        worker.head_since = self.loop.time()\n",
        "",
        (f"{_POOL}::test_waiting_in_the_queue_does_not_count_against_the_budget",),
    ),
    Mutation(
        "sends-not-shared",
        "workers of a fleet space their starts from each other's real sends",
        "courtier.pipeline.scheduling.clocks",
        "        if self._memory is not None:\n            return\n"
        "        read = self._next_read\n",
        "        if True:\n            return\n        read = self._next_read\n",
        (
            f"{_SCHEDULER}::"
            "test_two_workers_space_their_starts_on_a_shared_origin_from_each_others_sends",
            f"{_SPACING}::test_workers_on_one_sqlite_limiter_see_each_others_real_sends",
        ),
    ),
    Mutation(
        "media-placeholder-fetched",
        "an image holding a placeholder is never fetched by the media lanes",
        "courtier.pipeline.lanes.media",
        "        if not self.intake.admits(url.fetch_url):\n",
        "        if False:\n",
        (f"{_INTAKE}::test_a_media_image_holding_a_placeholder_is_never_fetched",),
    ),
    Mutation(
        "redirect-to-secret-followed",
        "a redirect (page, media, robots.txt) to a Location carrying a secret is not followed",
        "courtier.pipeline.feed.intake",
        "        if redact_url(location, self.redaction).changed:\n",
        "        if False:\n",
        (
            f"{_INTAKE}::test_a_media_redirect_to_a_secret_is_never_followed",
            f"{_INTAKE}::test_a_robots_txt_redirect_to_a_secret_is_never_followed",
        ),
    ),
    Mutation(
        "split-discovery-first",
        "the crawl's split follows its target: choosing discovery whenever a site has some fails",
        "courtier.pipeline.lanes.crawl_split",
        "            self.state, self.target, discovery_ready=discovery_ready,",
        "            self.state, 1.0, discovery_ready=discovery_ready,",
        ("tests/pipeline/test_crawl_split_fast.py",),
    ),
    Mutation(
        "fresh-link-waits-its-turn",
        "a fresh link overtakes the backlog a site holds (the priority path)",
        "courtier.pipeline.lanes.feeding",
        "                self.lease_urgent(lane)\n",
        "                pass\n",
        ("tests/pipeline/test_priority_path_fast.py",),
    ),
    Mutation(
        "fresh-source-any-change",
        "a fast source brings new links, not just a changed fingerprint (a counter is no news)",
        "courtier.frontier.fresh",
        "    productive = changed and new_links > 0\n",
        "    productive = changed\n",
        ("tests/frontier/test_fresh.py",),
    ),
    Mutation(
        "fresh-source-look-waits",
        "a fast source's look is urged on the priority path when it falls due",
        "courtier.pipeline.feed.fresh_sources",
        "        self.timer.call_at(source.next_visit + DUE_MARGIN, self.urge, rt.site)\n",
        "",
        ("tests/pipeline/test_fresh_sources_fast.py",),
    ),
    Mutation(
        "shared-send-gathered",
        "a send on a key another worker may read is written at once, not gathered",
        "courtier.pipeline.scheduling.send_spacing",
        "            urgent = urgent or not private(key)\n",
        "",
        ("tests/pipeline/test_shared_clock_writes_fast.py",),
    ),
    Mutation(
        "hop-books-before-pending-floor",
        "a hop's booking writes the floors pending on its keys first",
        "courtier.pipeline.scheduling.clocks",
        "            await self.flush_sent()  # a hop onto a site that just sent:"
        " its floor first\n",
        "            pass\n",
        ("tests/pipeline/test_shared_clock_writes_fast.py",),
    ),
    Mutation(
        "booked-at-its-time",
        "a lane booked by round trip is booked before its own time, as of that time",
        "courtier.pipeline.scheduling.scheduler",
        "        ahead = 0.0 if self.clocks.books_now else BOOK_AHEAD\n",
        "        ahead = 0.0\n",
        ("tests/pipeline/test_booking_ahead.py",),
    ),
    Mutation(
        "moved-lane-waits-in-old-line",
        "a lane refused on keys its site has left asks again on its new keys",
        "courtier.pipeline.scheduling.booker",
        "        return {limit.key for limit in now_limits} != {limit.key for limit in limits}\n",
        "        return False\n",
        ("tests/pipeline/test_booking_ahead.py",),
    ),
    Mutation(
        "sends-alone-on-any-origin",
        "only the origin of a site alone on it, held here, skips the read of others' sends",
        "courtier.pipeline.cluster.membership",
        "        return key.startswith(_OWN_ORIGINS) and key[len(_OWN_ORIGINS) :]"
        " in self.held_hosts\n",
        '        return key.startswith("origin:")\n',
        ("tests/pipeline/test_fenced_refills.py",),
    ),
    Mutation(
        "shard-reconnect-at-beat-pace",
        "a keeper that lost its session asks for a new one with backoff, not once per beat",
        "courtier.pipeline.cluster.shards",
        "                continue  # take shards again at once: every site waits for them\n",
        "",
        ("tests/pipeline/test_shards.py",),
    ),
    Mutation(
        "render-media-answer-unarchived",
        "a render's request through a media lane ([render] hosts, a media host) is archived",
        "courtier.pipeline.lanes.render_media",
        "    await work.deliver(answer)\n",
        "    if not work.answer.done():\n        work.answer.set_result(answer)\n",
        (
            f"{_RENDERING}::"
            "test_requests_to_media_hosts_and_named_hosts_are_booked_on_their_own_keys",
            f"{_RENDERING}::"
            "test_a_renders_request_answered_after_it_gave_up_is_archived_all_the_same",
        ),
    ),
    Mutation(
        "render-site-answer-unarchived",
        "a render's request through its site's lane is archived, redacted",
        "courtier.pipeline.lanes.rendering",
        "        await work.deliver(answer)\n",
        "        if not work.answer.done():\n            work.answer.set_result(answer)\n",
        (
            f"{_RENDERING}::"
            "test_a_renders_429_backs_its_site_off_and_its_answers_are_archived_redacted",
        ),
    ),
    Mutation(
        "render-late-answer-unarchived",
        "a render's request answered after the render gave up on it is archived all the same",
        "courtier.pipeline.lanes.site",
        "            if answer.result is not None and self.keep is not None:\n",
        "            if answer.result is not None and self.keep is not None"
        " and not self.answer.done():\n",
        (
            f"{_RENDERING}::"
            "test_a_renders_request_answered_after_it_gave_up_is_archived_all_the_same",
        ),
    ),
    Mutation(
        "render-dom-unredacted",
        "the rendered DOM's conversion record is redacted",
        "courtier.pipeline.lanes.rendering",
        "            if capture.raw or page.payload is None:",
        "            if True:",
        (
            f"{_RENDERING}::"
            "test_a_renders_429_backs_its_site_off_and_its_answers_are_archived_redacted",
        ),
    ),
    Mutation(
        "paused-in-store-starts",
        "a site paused in the store is held when the crawl starts or restarts",
        "courtier.pipeline.lanes.controls",
        "        lane.sched.held_until = control.held_until(now)\n",
        "",
        (
            "tests/pipeline/test_site_hold_fast.py::"
            "test_a_site_paused_in_the_store_is_held_when_the_crawl_starts_again",
            f"{_CRAWLER}::test_a_site_paused_in_the_store_gets_no_request_when_the_crawl_restarts",
        ),
    ),
    Mutation(
        "controls-read-after-lanes",
        "the store's controls are read before the start makes any lane",
        "courtier.pipeline.engine",
        "        await self.frontier.call(self.controls.load)\n"
        "        self.seed.start(scope, self.seeds, sizes)\n",
        "        self.seed.start(scope, self.seeds, sizes)\n"
        "        await self.frontier.call(self.controls.load)\n",
        (f"{_CRAWLER}::test_a_site_paused_in_the_store_gets_no_request_when_the_crawl_restarts",),
    ),
    Mutation(
        "drop-keeps-leases",
        "dropping a site gives its leased URLs back to the store (SQLite and PostgreSQL)",
        "courtier.pipeline.lanes.controls",
        "            await self.frontier.call(release)\n",
        "",
        (
            "tests/pipeline/test_controls_drop.py::"
            "test_a_dropped_sites_leased_urls_go_back_to_the_store",
        ),
    ),
    Mutation(
        "opt-out-pages-only",
        "an opted-out host gets no request of any kind (media, a render's) either",
        "courtier.pipeline.answers.fetching",
        "        if host in self.opted_out:\n",
        '        if host in self.opted_out and context.kind in ("page", "robots", "sitemap"):\n',
        (
            "tests/pipeline/test_controls_drop.py::"
            "test_an_opted_out_host_gets_no_request_of_any_kind_and_each_refusal_is_logged",
        ),
    ),
    Mutation(
        "opt-out-unlogged",
        "each opt-out refusal is a row of the request log",
        "courtier.pipeline.answers.fetching",
        "            self.observer.request(RequestEvent(context, url, self.wall_clock(), None,"
        " OPTED_OUT))\n",
        "",
        (
            "tests/pipeline/test_controls_drop.py::"
            "test_an_opted_out_host_gets_no_request_of_any_kind_and_each_refusal_is_logged",
        ),
    ),
    Mutation(
        "lost-lanes-stay-in-seed",
        "a shard lost leaves the seed's lanes: taken back, it brings lanes under its new fence",
        "courtier.pipeline.cluster.membership",
        "        self.seed.drop(lanes)\n",
        "",
        (
            "tests/pipeline/test_fenced_refills.py::"
            "test_a_lost_fence_drops_every_lane_of_its_shard_from_the_scheduler_and_the_seed",
        ),
    ),
    Mutation(
        "lost-fence-drops-one-lane",
        "a booking's lost fence drops every lane of the shard, not the booking's alone",
        "courtier.pipeline.cluster.membership",
        "            asyncio.get_running_loop().create_task(self.lost(lane.fence.shard, False))\n",
        "            self.pages.drop(lane)\n            self.seed.drop([lane])\n",
        (
            "tests/pipeline/test_fenced_refills.py::"
            "test_a_lost_fence_drops_every_lane_of_its_shard_from_the_scheduler_and_the_seed",
        ),
    ),
    Mutation(
        "canonical-copy-of-its-copy",
        "a canonical named only by its copies is crawled, and is no copy of its copy",
        "courtier.pipeline.keeping.keeper",
        "        key = url if page.canonical is None else page.canonical.fetch_url\n",
        "        key = url\n",
        (
            "tests/pipeline/test_discovery_canonical_fast.py::"
            "test_a_canonical_named_only_by_its_copies_is_crawled_and_is_no_copy_of_them",
        ),
    ),
    Mutation(
        "recrawl-waits-its-turn",
        "an operator's recrawl (fastlane) overtakes the backlog a site holds (the priority path)",
        "courtier.pipeline.lanes.controls",
        "                self.look_again(lane)\n",
        "                pass\n",
        (
            "tests/pipeline/test_priority_path_fast.py::"
            "test_an_operators_recrawl_overtakes_a_500_url_backlog",
        ),
    ),
    Mutation(
        "pg-outage-crowd-dials",
        "callers queued for a session when the limiter's server went away do not dial it",
        "courtier.politeness.limiter.postgres",
        "            if current is not None and current is not passed:\n",
        "            if False:\n",
        (
            "tests/politeness/test_limiter_outage_fast.py::"
            "test_while_the_server_is_away_one_caller_at_a_time_asks_for_it",
        ),
    ),
    Mutation(
        "pg-outage-every-caller-asks",
        "while the limiter's server is away, one caller at a time asks for it, after a backoff",
        "courtier.politeness.limiter.postgres",
        "        if now < outage.retry_at:\n",
        "        if False:\n",
        (
            "tests/politeness/test_limiter_outage_fast.py::"
            "test_while_the_server_is_away_one_caller_at_a_time_asks_for_it",
            "tests/politeness/test_limiter_outage_fast.py::"
            "test_the_server_is_asked_again_ever_less_often_up_to_five_seconds",
        ),
    ),
    Mutation(
        "pg-outage-flat-backoff",
        "the limiter asks a server that is away ever less often (doubling up to 5 s)",
        "courtier.politeness.limiter.postgres",
        "        delay = min(last.delay * 2, 5.0)\n",
        "        delay = last.delay\n",
        (
            "tests/politeness/test_limiter_outage_fast.py::"
            "test_the_server_is_asked_again_ever_less_often_up_to_five_seconds",
        ),
    ),
    Mutation(
        "pg-schema-unlocked",
        "workers setting up the limiter's schema together on a new database do not collide",
        "courtier.politeness.limiter.postgres",
        '        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))\n',
        "",
        (
            "tests/politeness/test_limiter_backends.py::"
            "test_concurrent_postgres_setups_do_not_collide",
        ),
    ),
    Mutation(
        "store-outage-flat-backoff",
        "an unreachable frontier store is asked again ever less often (doubling up to 5 s)",
        "courtier.pipeline.feed.frontier_io",
        "                delay = min(delay * 2, 5.0)\n",
        "                delay = min(delay, 5.0)\n",
        (
            "tests/pipeline/test_outages_fast.py::"
            "test_a_store_is_asked_again_ever_less_often_until_it_is_back",
        ),
    ),
    Mutation(
        "store-outage-no-wait",
        "an unreachable frontier store is asked again after a wait, not at once",
        "courtier.pipeline.feed.frontier_io",
        "                await asyncio.sleep(delay * random.uniform(0.5, 1.0))\n",
        "",
        (
            "tests/pipeline/test_outages_fast.py::"
            "test_a_store_away_past_the_outage_limit_is_given_up_on_at_that_limit",
        ),
    ),
    Mutation(
        "refresh-copy-of-its-copy",
        "a changed refresh of an original is never marked a copy of its own copy",
        "courtier.content.duplicates",
        "            entry = self._add(url, text, entry.seq)\n",
        "            entry = self._add(url, text)\n",
        (
            "tests/content/test_duplicates.py::"
            "test_a_changed_refresh_of_the_original_is_no_copy_of_its_own_copy",
            "tests/content/test_duplicates.py::"
            "test_a_changed_refresh_of_the_original_is_no_near_copy_of_its_own_copy",
        ),
    ),
    Mutation(
        "fresh-refused-state-dropped",
        "fast-source state the store could not take is written at the next round",
        "courtier.pipeline.feed.fresh_sources",
        "            for url_id, (source, schedule) in unsaved.items():\n",
        "            for url_id, (source, schedule) in {}.items():\n",
        (
            "tests/pipeline/test_fresh_sources_fast.py::"
            "test_what_the_store_could_not_take_is_written_at_the_next_round",
        ),
    ),
    Mutation(
        "fresh-refused-schedule-dropped",
        "a fast source's refused schedule is written even if a later visit had none to write",
        "courtier.pipeline.feed.fresh_sources",
        "(later[0], later[1] or schedule)",
        "(later[0], later[1])",
        (
            "tests/pipeline/test_fresh_sources_fast.py::"
            "test_a_schedule_refused_is_written_even_after_a_later_visit_that_had_none",
        ),
    ),
    Mutation(
        "split-one-sites-backlog",
        "the crawl-wide split's target is computed from the sum of every site's backlog",
        "courtier.pipeline.lanes.crawl_split",
        "                self.backlog = sum(lane.backlog for lane in lanes)\n",
        "                self.backlog = lanes[0].backlog\n",
        ("tests/pipeline/test_crawl_split_fast.py",),
    ),
    Mutation(
        "split-one-sites-rate",
        "the crawl-wide split's target is computed from the sum of every site's emit rate",
        "courtier.pipeline.lanes.crawl_split",
        "                self.rate = sum(lane.emit.rate(now) for lane in lanes)\n",
        "                self.rate = lanes[0].emit.rate(now)\n",
        (
            "tests/pipeline/test_crawl_split_fast.py::"
            "test_the_target_is_the_drain_time_of_every_sites_backlog_at_every_sites_rate",
        ),
    ),
    Mutation(
        "feed-type-case",
        "a feed link is found whatever the case of its type attribute",
        "courtier.content.feed_links",
        '        kind = (attributes.get("type") or "").strip().lower()\n',
        '        kind = (attributes.get("type") or "").strip()\n',
        ("tests/content/test_feed_links.py",),
    ),
    Mutation(
        "feed-bytes-lower-case-only",
        "a page naming its feed's type in upper case is looked at for feed links",
        "courtier.content.feed_links",
        "    if _PLUS_XML.search(body) is None:\n",
        '    if b"+xml" not in body:\n',
        ("tests/content/test_feed_links.py",),
    ),
    Mutation(
        "unsure-language-named",
        "an unsure language identification names no language",
        "courtier.content.language",
        "    if found.reliable or (not short and _one_language(found)):\n",
        "    if True:\n",
        (
            "tests/content/test_language.py::test_an_unsure_identification_names_no_language",
            "tests/content/test_language.py::test_a_language_is_named_where_cld2_is_sure_or_finds_one",
        ),
    ),
    Mutation(
        "robots-hop-refetches",
        "a robots.txt redirect to another host's robots.txt takes its rules from the cache",
        "courtier.pipeline.answers.robots_fetch",
        '        if target.target == "/robots.txt":\n',
        "        if False:\n",
        (
            "tests/pipeline/test_robots_hops_fast.py::"
            "test_a_robots_txt_redirect_to_a_seed_sites_robots_txt_is_taken_from_the_cache",
            "tests/pipeline/test_robots_hops_fast.py::"
            "test_two_sites_redirecting_to_one_robots_txt_fetch_it_once",
        ),
    ),
    Mutation(
        "robots-hop-beside-its-lane",
        "a robots.txt redirect hop to a seed site is that site's lane's work (one in flight)",
        "courtier.pipeline.lanes.robots_hops",
        "            lane = self._lane(url.site)\n            if lane is None:\n",
        "            lane = None\n            if lane is None:\n",
        (
            "tests/pipeline/test_robots_hops_fast.py::"
            "test_a_hop_waits_for_the_targets_request_in_flight",
        ),
    ),
    Mutation(
        "ptr-address-edge-by-behaviour",
        "a platform's tenants on one address with a PTR name stay one origin, whatever they answer",
        "courtier.origins.cluster",
        "            elif len(members) > 1 and not any(m.dns.ptr.get(address) for m in members):\n",
        "            elif len(members) > 1:\n",
        (
            "tests/origins/test_origin_no_split_without_evidence.py::"
            "test_tenants_on_an_address_with_a_ptr_name_stay_one_origin_whatever_they_answer",
        ),
    ),
    Mutation(
        "one-stack-behind-cdn-marks-split",
        "a CDN's marks over one server stack are no proof that different backends answer",
        "courtier.origins.cluster",
        "or mark is None or len(products) < 2:",
        "or mark is None or len(products) < 1:",
        (
            "tests/origins/test_origin_no_split_without_evidence.py::test_identical_stacks_behind_an_unnamed_edge_are_kept_together",
        ),
    ),
    Mutation(
        "unheard-sites-leave-a-branded-edge",
        "a site not heard from yet waits with the platform seen straight on its edge",
        "courtier.origins.cluster",
        "            self.union.union([*brands, *waiting])\n",
        "            pass\n",
        (
            "tests/origins/test_origin_no_split_without_evidence.py::test_sites_not_heard_from_wait_with_a_platform_seen_straight_on_their_edge",
        ),
    ),
    Mutation(
        "shared-cdn-name-splits-on-a-sample",
        "sites sharing a CDN's name are one origin until every one of them has answered",
        "courtier.origins.cluster",
        "        if len(answered) < len(direct):\n",
        "        if _sample_pending(direct):\n",
        (
            "tests/origins/test_origin_no_split_without_evidence.py::test_a_shared_cdn_name_waits_for_every_one_of_its_sites",
        ),
    ),
    Mutation(
        "moved-alone-drops-its-slot",
        "a site moving alone to another origin carries its own booked slot into the new clock",
        "courtier.pipeline.lanes.origins_live",
        "                ends.append(state.slot.start + state.slot.cost * per_unit)\n",
        "                pass\n",
        (
            "tests/pipeline/test_origin_moves_fast.py::test_a_site_split_off_alone_carries_its_booked_slot_into_its_new_clock",
        ),
    ),
    Mutation(
        "pin-lost-to-inference",
        "an operator's origin pin wins over re-inference",
        "courtier.pipeline.lanes.origins_live",
        "                if self.manual(lane.site) is not None:\n                    continue",
        "                if False:\n                    continue",
        ("tests/pipeline/test_origin_moves_fast.py::test_a_pin_wins_over_a_later_inference",),
    ),
    Mutation(
        "joining-site-spend-forgotten",
        "a site joining an origin brings its recent requests onto that origin's clock",
        "courtier.pipeline.lanes.origins_live",
        "                spent += state.last_cost * per_unit"
        " if lane.last_sent > now - SPENT_MEMORY else 0\n",
        "                spent += 0\n",
        (
            "tests/pipeline/test_origin_moves_fast.py::"
            "test_a_site_joining_a_busy_origin_brings_its_first_request_along",
        ),
    ),
    Mutation(
        "platform-media-robots-off-origin",
        "a platform's own media host's robots.txt is booked on the platform's origin",
        "courtier.pipeline.lanes.media",
        'lane.name == f"cdn-miss:{lane.site}" or first.on_origin)',
        'lane.name == f"cdn-miss:{lane.site}" or False)',
        (
            "tests/pipeline/test_media_places_fast.py::"
            "test_images_of_hosts_placed_by_dns_are_fetched_on_their_keys",
        ),
    ),
)


class CheckError(Exception):
    """The check cannot be run as written (a target or a test is not what it names)."""


def source_of(module: str) -> Path:
    """The file of ``module`` in this checkout's ``src`` (never an installed copy)."""
    if sys.path[0] != str(SRC):
        sys.path.insert(0, str(SRC))
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError as exc:
        raise CheckError(f"module {module} not found: {exc}") from None
    if spec is None or spec.origin is None:
        raise CheckError(f"module {module} not found")
    path = Path(spec.origin).resolve()
    if not path.is_relative_to(SRC) or path.suffix != ".py":
        raise CheckError(f"module {module} resolves to {path}, not a source file under {SRC}")
    return path


def mutated(mutation: Mutation, source: str, path: Path) -> str:
    found = source.count(mutation.target)
    if found != 1:
        raise CheckError(
            f"{mutation.name}: its target text is found {found} times in {path} (must be "
            f"exactly once: update the entry to the code as it is now):\n{mutation.target}"
        )
    return source.replace(mutation.target, mutation.replacement)


def run_tests(tests: Sequence[str], *, verbose: bool) -> tuple[int, str]:
    """pytest's exit status and the tail of its output. An interruption stops pytest with
    SIGINT first, so its fixtures (a PostgreSQL cluster) are torn down."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no bytecode of a mutated module is left behind
    # One process (-n 0): under pytest-xdist a first failure with -x ends the run as
    # "interrupted" (exit 2), which would read as tests that cannot run.
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider"]
    command += ["-m", "not unstable"]  # the tests named run even when marked long
    command += tests
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = process.communicate(timeout=RUN_SECONDS)
    except BaseException:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        raise
    if verbose:
        print(output)
    return process.returncode, "\n".join(output.strip().splitlines()[-15:])


def check(mutation: Mutation, *, verbose: bool) -> str:
    """KILLED or SURVIVED; the module's file is as it was afterwards, whatever happens."""
    path = source_of(mutation.module)
    original = path.read_bytes()
    stat = path.stat()
    text = mutated(mutation, original.decode("utf-8"), path)
    try:
        path.write_bytes(text.encode("utf-8"))
        try:
            status, tail = run_tests(mutation.tests, verbose=verbose)
        except subprocess.TimeoutExpired:
            return "KILLED"  # the tests did not pass (they hung)
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    if status == 0:
        return "SURVIVED"
    if status == 1:
        return "KILLED"
    raise CheckError(f"{mutation.name}: pytest could not run the tests (exit {status}):\n{tail}")


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # unwinds through every ``finally``: the file is put back


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="entries to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the entries and exit")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    parser.add_argument("-v", "--verbose", action="store_true", help="show pytest's output")
    args = parser.parse_args(argv)
    by_name = {m.name: m for m in MUTATIONS}
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:28} {m.module:38} {m.promise}")
        return 0
    unknown = [name for name in args.names if name not in by_name]
    if unknown:
        parser.error(f"no such entries: {', '.join(unknown)} (see --list)")
    chosen = [by_name[name] for name in args.names] or list(MUTATIONS)
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        for m in chosen:  # every target is found once before anything is run
            mutated(m, source_of(m.module).read_text(encoding="utf-8"), source_of(m.module))
        if not args.no_baseline:
            tests = list(dict.fromkeys(t for m in chosen for t in m.tests))
            started = time.monotonic()
            status, tail = run_tests(tests, verbose=args.verbose)
            if status != 0:
                raise CheckError(f"the tests fail without any mutation (exit {status}):\n{tail}")
            elapsed = time.monotonic() - started
            print(f"baseline: {len(tests)} tests pass unmutated ({elapsed:.0f} s)", flush=True)
        results: list[str] = []
        for m in chosen:
            started = time.monotonic()
            result = check(m, verbose=args.verbose)
            results.append(result)
            elapsed = time.monotonic() - started
            print(f"{result:8} {m.name:28} {elapsed:5.0f} s  {m.promise}", flush=True)
    except CheckError as exc:
        print(f"ERROR: {exc}", file=sys.stderr)
        return 2
    survived = results.count("SURVIVED")
    print(f"{len(results)} mutations: {len(results) - survived} killed, {survived} survived")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
