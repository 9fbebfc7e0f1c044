#!/usr/bin/env python3
"""make_fixtures.py — writes the interop fixtures of this directory.

Each fixture is one OpenADR 3 object in the wire form a real implementation
produces (README.md here says which, from which source file, and what pfi
must make of it). They are written by this script rather than by hand so
that the long ones (96 and 672 intervals) stay regular and the serializers'
rules are written down once, here:

  openleadr-rs (OpenLEADR/openleadr-rs, Apache-2.0 OR MIT):
    * timestamps: chrono's DateTime::to_rfc3339() (openleadr-wire/src/lib.rs,
      mod serde_rfc3339): always "+00:00", never "Z"; a fraction only when
      there is one, in groups of 3, 6 or 9 digits (chrono's AutoSi);
    * durations: openleadr-wire/src/lib.rs `impl Display for Duration`:
      "P{y}Y{m}M{d}DT{h}H{m}M{s}S", every field, each an f32 printed by Rust
      (1.0 -> "1", 1.5 -> "1.5"); weeks were folded into days when parsed
      (iso8601-duration 0.2.0, src/duration.rs parse_week_format);
    * fields left out when None (serde_with skip_serializing_none) except
      `priority` (a newtype, written null) and `targets` (a Vec, written []);
      events and their payloadDescriptors carry no objectType
      (openleadr-wire/src/event.rs), programs do (src/program.rs).
  ElaadNL openadr3-client (Apache-2.0):
    * model_dump(by_alias=True, mode="json") (oadr310/_vtn/http/events.py):
      every optional field present, null when unset;
    * timestamps: pydantic AwareDatetime -> "...Z" for UTC;
    * durations: pydantic timedelta -> speedate's Display (pydantic/speedate
      src/duration.rs): "PT15M", "P1DT6H", "P1Y35D" (a year is 365 days),
      "PT0S" for zero.

Run it from anywhere; it rewrites the *.json fixtures next to it.
"""

import datetime as dt
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
UTC = dt.timezone.utc


# ---- serializer rules --------------------------------------------------

def olrs_ts(t):
    """chrono to_rfc3339 of a DateTime<Utc>: +00:00, AutoSi fraction."""
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    us = t.microsecond
    if us == 0:
        frac = ""
    elif us % 1000 == 0:
        frac = ".%03d" % (us // 1000)
    else:
        frac = ".%06d" % us
    return base + frac + "+00:00"


def _f32(v):
    """Rust's Display of an f32 holding v (no exponent, no trailing .0)."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def olrs_dur(y=0, mo=0, d=0, h=0, mi=0, s=0):
    return "P%sY%sM%sDT%sH%sM%sS" % tuple(_f32(x) for x in (y, mo, d, h, mi, s))


def elaad_ts(t):
    """pydantic v2 JSON of an aware UTC datetime."""
    s = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        s += ".%06d" % t.microsecond
    return s + "Z"


def elaad_dur(td):
    """pydantic v2 JSON of a timedelta (speedate Duration's Display)."""
    neg = td < dt.timedelta(0)
    if neg:
        td = -td
    days, secs, us = td.days, td.seconds, td.microseconds
    out = "-P" if neg else "P"
    if days:
        if days // 365:
            out += "%dY" % (days // 365)
        if days % 365:
            out += "%dD" % (days % 365)
    if secs or us:
        out += "T"
        h, rem = divmod(secs, 3600)
        m, s = divmod(rem, 60)
        if h:
            out += "%dH" % h
        if m:
            out += "%dM" % m
        if s or us:
            out += "%d" % s
            if us:
                out += "." + ("%06d" % us).rstrip("0")
            out += "S"
    if not (days or secs or us):
        out += "T0S"
    return out


# ---- output ------------------------------------------------------------

def _compact(o):
    return json.dumps(o, separators=(", ", ": "), ensure_ascii=False)


def _dump(o, ind=0):
    """Indented JSON; each interval (an object with "payloads") and each
    short leaf on one line, so 672 intervals stay 672 lines."""
    pad = "  " * (ind + 1)
    if isinstance(o, dict):
        if not o:
            return "{}"
        if "payloads" in o or len(_compact(o)) <= 72 and not any(
                isinstance(v, (dict, list)) and len(_compact(v)) > 40 for v in o.values()):
            return _compact(o)
        items = ["%s%s: %s" % (pad, json.dumps(k), _dump(v, ind + 1)) for k, v in o.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * ind + "}"
    if isinstance(o, list):
        if not o:
            return "[]"
        if all(not isinstance(v, (dict, list)) for v in o) and len(_compact(o)) <= 72:
            return _compact(o)
        return "[\n" + ",\n".join(pad + _dump(v, ind + 1) for v in o) + "\n" + "  " * ind + "]"
    return json.dumps(o, ensure_ascii=False)


def write(name, obj):
    with open(os.path.join(HERE, name), "w") as f:
        f.write(_dump(obj) + "\n")


# ---- openleadr-rs (olrs_*) ---------------------------------------------
# ids: the VTN's gen_random_uuid() (openleadr-vtn/src/data_source/postgres/
# event.rs, INSERT ... VALUES (gen_random_uuid(), now(), now(), ...))

OLRS_PROGRAM = "6b0f8a52-3c1e-4f7a-9d21-5e8c4b7a0f10"
OLRS_PROGRAM_W = "d3c94e1a-7b25-4a6e-8f03-2c9e61b8a4d7"
OLRS_CREATED = dt.datetime(2030, 1, 6, 9, 15, 42, 417203, tzinfo=UTC)
T0 = dt.datetime(2030, 1, 7, 12, 0, tzinfo=UTC)


def olrs_event(eid, name, period=None, intervals=(), descriptors=True, program=OLRS_PROGRAM,
               priority=None, modified=None, unit="KW"):
    """An Event as openleadr-rs serializes it (openleadr-wire/src/event.rs:
    id, createdDateTime, modificationDateTime, then EventRequest's fields in
    declaration order; None fields left out but priority and targets)."""
    ev = {
        "id": eid,
        "createdDateTime": olrs_ts(OLRS_CREATED),
        "modificationDateTime": olrs_ts(modified or OLRS_CREATED),
        "programID": program,
        "eventName": name,
        "priority": priority,
        "targets": [],
    }
    if descriptors:
        ev["payloadDescriptors"] = [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": unit}]
    if period is not None:
        ev["intervalPeriod"] = period
    ev["intervals"] = list(intervals)
    return ev


def cap(v, typ="IMPORT_CAPACITY_LIMIT"):
    return [{"type": typ, "values": [v]}]


def olrs_fixtures():
    write("olrs_full_form_durations.json", olrs_event(
        "0c5e2f7a-91d3-4b6e-a8f4-3d2b1c0e9a01", "full-form durations",
        period={"start": olrs_ts(T0), "duration": olrs_dur(h=1), "randomizeStart": olrs_dur(mi=5)},
        intervals=[{"id": 0, "payloads": cap(12.5)},
                   {"id": 1, "payloads": cap(10.0)},
                   {"id": 2, "payloads": cap(8.0)}]))

    write("olrs_until_cancelled.json", olrs_event(
        "1d6f3a8b-a2e4-4c7f-b9a5-4e3c2d1f0b02", "until cancelled",
        period={"start": olrs_ts(T0 + dt.timedelta(hours=6)), "duration": olrs_dur(y=9999)},
        intervals=[{"id": 0, "payloads": cap(20.0)}]))

    # "now" as openleadr-rs serves it: the BL posted 0001-01-01T00:00:00Z,
    # chrono parsed it and writes it back with +00:00
    # (openleadr-wire/src/interval.rs, test parse_interval_period)
    write("olrs_now_offset.json", olrs_event(
        "2e7a4b9c-b3f5-4d8a-8ab6-5f4d3e2a1c03", "do it now, until cancelled",
        period={"start": "0001-01-01T00:00:00+00:00", "duration": olrs_dur(y=9999)},
        intervals=[{"id": 0, "payloads": [{"type": "SIMPLE", "values": [1]}]}],
        descriptors=False, priority=0))

    # "now" in the Z form: what a BL posts to openleadr-rs (and what a VTN
    # that keeps the text, not a DateTime, serves back)
    write("olrs_now_z.json", olrs_event(
        "3f8b5cad-c4a6-4e9b-9bc7-6a5e4f3b2d04", "do it now, two hours",
        period={"start": "0001-01-01T00:00:00Z", "duration": olrs_dur(h=2)},
        intervals=[{"id": 0, "payloads": cap(15.0)}]))

    # intervals with a start and no duration: openleadr-client/src/timeline.rs
    # makes each run to DateTime::MAX_UTC, a later interval taking over from
    # its own start (rangemap insert), so: until the next start, the last
    # until cancelled
    write("olrs_start_no_duration.json", olrs_event(
        "4a9c6dbe-d5b7-4fac-8cd8-7b6f5a4c3e05", "starts without durations",
        intervals=[{"id": 0, "intervalPeriod": {"start": olrs_ts(T0)}, "payloads": cap(10.0)},
                   {"id": 1, "intervalPeriod": {"start": olrs_ts(T0 + dt.timedelta(hours=2))},
                    "payloads": cap(6.0)}]))

    # a day of 15-minute limits, each interval with its own period
    day0 = dt.datetime(2030, 1, 8, 0, 0, tzinfo=UTC)
    ivs = []
    for k in range(96):
        hour = k // 4
        v = 25.0 if 17 <= hour < 21 else 32.5 if 7 <= hour < 17 else 40.0
        ivs.append({"id": k, "intervalPeriod": {
            "start": olrs_ts(day0 + dt.timedelta(minutes=15 * k)), "duration": olrs_dur(mi=15)},
            "payloads": cap(v)})
    write("olrs_day_96x15m.json", olrs_event(
        "5bad7ecf-e6c8-4abd-9de9-8c7a6b5d4f06", "day ahead, 96 x 15 min", intervals=ivs))

    # a week of 15-minute limits: one event-level period, 672 bare intervals
    week0 = dt.datetime(2030, 1, 14, 0, 0, tzinfo=UTC)
    ivs = []
    for k in range(672):
        hour = (k // 4) % 24
        weekend = k // 96 >= 5
        v = 40.0 if weekend else 25.0 if 17 <= hour < 21 else 32.5 if 7 <= hour < 17 else 40.0
        ivs.append({"id": k, "payloads": cap(v)})
    write("olrs_week_672x15m.json", olrs_event(
        "6cbe8fd0-f7d9-4bce-aefa-9d8b7c6e5a07", "week ahead, 672 x 15 min",
        period={"start": olrs_ts(week0), "duration": olrs_dur(mi=15)}, intervals=ivs))

    # units only on the program (User Guide 7.6: a program's payloadDescriptors
    # are the defaults of its events); the event has none: openleadr-rs leaves
    # the key out (skip_serializing_none)
    write("olrs_units_from_program.json", olrs_event(
        "7dcf9ae1-08ea-4cdf-8f0b-ae9c8d7f6b08", "5000 W, units from the program",
        period={"start": olrs_ts(T0), "duration": olrs_dur(h=1)},
        intervals=[{"id": 0, "payloads": cap(5000.0)}], descriptors=False, program=OLRS_PROGRAM_W))
    # its program: Program + ProgramRequest (tag objectType PROGRAM), each
    # payloadDescriptor tagged EVENT_PAYLOAD_DESCRIPTOR (openleadr-wire/src/
    # program.rs, enum PayloadDescriptor)
    write("olrs_program_units_w.json", {
        "id": OLRS_PROGRAM_W,
        "createdDateTime": olrs_ts(dt.datetime(2030, 1, 1, 8, 0, 0, 776000, tzinfo=UTC)),
        "modificationDateTime": olrs_ts(dt.datetime(2030, 1, 1, 8, 0, 0, 776000, tzinfo=UTC)),
        "objectType": "PROGRAM",
        "programName": "site capacity in W",
        "payloadDescriptors": [{"objectType": "EVENT_PAYLOAD_DESCRIPTOR",
                                "payloadType": "IMPORT_CAPACITY_LIMIT", "units": "W"}],
        "targets": [],
    })

    # the BL posted "P2W": iso8601-duration folds weeks into days
    write("olrs_weeks_as_days.json", olrs_event(
        "8ed0abf2-19fb-4de0-907c-bfad9e807c09", "two weeks (posted as P2W)",
        period={"start": olrs_ts(T0), "duration": olrs_dur(d=14)},
        intervals=[{"id": 0, "payloads": cap(30.0)}]))

    # the BL posted "PT1.5H": kept as an f32 hour, outside the spec's pattern
    write("olrs_fractional_hours.json", olrs_event(
        "9fe1bc03-2a0c-4ef1-a18d-c0be0f918d10", "an hour and a half (posted as PT1.5H)",
        period={"start": olrs_ts(T0), "duration": olrs_dur(h=1.5)},
        intervals=[{"id": 0, "payloads": cap(18.0)}]))

    # notifications: openleadr-rs sends them over MQTT and WebSocket only
    # (openleadr-vtn/src/api/subscription.rs notify, notify_mqtt: no HTTP
    # callback); Notification {id: uuid v7, operation, objectType, object}
    # (openleadr-wire/src/subscription.rs, AnyObject adjacently tagged)
    ev = olrs_event(
        "a0f2cd14-3b1d-4f02-b29e-d1cf10a29e11", "notified",
        period={"start": olrs_ts(T0), "duration": olrs_dur(mi=30)},
        intervals=[{"id": 0, "payloads": cap(9.0)}, {"id": 1, "payloads": cap(7.5)}])
    write("olrs_notification_create.json", {
        "id": "01945a3e-8c00-7b2a-9f10-3c4d5e6f7a80", "operation": "CREATE",
        "objectType": "EVENT", "object": ev})
    write("olrs_notification_delete.json", {
        "id": "01945a52-1e40-7c3b-8a21-4d5e6f7a8b91", "operation": "DELETE",
        "objectType": "EVENT", "object": ev})


# ---- ElaadNL openadr3-client (elaad_*) ---------------------------------

ELAAD_CREATED = dt.datetime(2030, 1, 6, 10, 0, tzinfo=UTC)


def vtn_meta(eid, obj):
    """What a VTN that keeps the posted object as it is adds around it."""
    out = {"id": eid, "createdDateTime": elaad_ts(ELAAD_CREATED),
           "modificationDateTime": elaad_ts(ELAAD_CREATED), "objectType": "EVENT"}
    out.update(obj)
    return out


def elaad_period(start, td):
    return {"start": elaad_ts(start), "duration": elaad_dur(td), "randomizeStart": None}


def elaad_event31(name, period, intervals, targets=("871685900000000018",)):
    """oadr310 NewEvent.model_dump(by_alias=True, mode="json")
    (openadr3_client/oadr310/models/event/event.py field order)."""
    return {
        "programID": "gac-program-1",
        "eventName": name,
        "priority": None,
        "targets": list(targets),
        "payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW",
                                "currency": None, "objectType": "EVENT_PAYLOAD_DESCRIPTOR"}],
        "reportDescriptors": None,
        "intervalPeriod": period,
        "intervals": intervals,
        "duration": None,
    }


def elaad_fixtures():
    d0 = dt.datetime(2030, 1, 8, 0, 0, tzinfo=UTC)
    q = dt.timedelta(minutes=15)
    # GAC "continuous": one event-level period, intervals without their own
    # (openadr3-client-gac-compliance gac21/event_gac_compliant.py
    # _continuous_or_separated)
    ivs = [{"id": k, "intervalPeriod": None, "payloads": cap(v)}
           for k, v in enumerate([11.0, 11.0, 7.4, 7.4, 3.7, 3.7, 11.0, 11.0])]
    write("elaad_gac_continuous.json", vtn_meta(
        "elaad-gac-continuous", elaad_event31("gac continuous", elaad_period(d0, q), ivs)))

    # GAC "separated": no event-level period, every interval its own
    ivs = []
    for k in range(96):
        hour = k // 4
        v = 3.7 if 17 <= hour < 21 else 11.0
        ivs.append({"id": k, "intervalPeriod": elaad_period(d0 + k * q, q), "payloads": cap(v)})
    write("elaad_gac_separated.json", vtn_meta(
        "elaad-gac-separated", elaad_event31("gac separated", None, ivs)))

    # pydantic's durations: H/M/S split, 365-day years, PT0S for zero
    spans = [dt.timedelta(hours=1, minutes=30), dt.timedelta(days=1, hours=6),
             dt.timedelta(0), dt.timedelta(days=400), dt.timedelta(days=9999 * 365)]
    ivs, t = [], d0
    for k, td in enumerate(spans):
        ivs.append({"id": k, "intervalPeriod": elaad_period(t, td), "payloads": cap(10.0 - k)})
        if k + 1 < len(spans):
            t += td
    write("elaad_durations.json", vtn_meta(
        "elaad-durations", elaad_event31("pydantic durations", None, ivs, targets=())))

    # 3.0.1: oadr301 NewEvent (no event duration; targets as valuesMaps)
    write("elaad_301_targets.json", vtn_meta("elaad-301-targets", {
        "programID": "gac-program-1",
        "eventName": "3.0.1 targeted",
        "priority": None,
        "targets": [{"type": "VEN_NAME", "values": ["pfi-test-ven"]}],
        "payloadDescriptors": [{"payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW",
                                "currency": None, "objectType": "EVENT_PAYLOAD_DESCRIPTOR"}],
        "reportDescriptors": None,
        "intervalPeriod": elaad_period(d0, dt.timedelta(hours=1)),
        "intervals": [{"id": 0, "intervalPeriod": None, "payloads": cap(11.0)},
                      {"id": 1, "intervalPeriod": None, "payloads": cap(5.5)}],
    }))

    # a REPORT as the 3.1 client posts it: payloadDescriptors typed as
    # EventPayloadDescriptor (oadr310/models/report/report.py _ReportBase)
    write("elaad_report_post.json", {
        "eventID": "elaad-gac-continuous",
        "clientName": "pfi-test-ven",
        "reportName": None,
        "payloadDescriptors": [{"payloadType": "USAGE", "units": "KWH", "currency": None,
                                "objectType": "EVENT_PAYLOAD_DESCRIPTOR"}],
        "resources": [{"resourceName": "pfi-gpus", "intervalPeriod": None, "intervals": [
            {"id": 0, "intervalPeriod": elaad_period(d0, q),
             "payloads": [{"type": "USAGE", "values": [2.5]}]}]}],
    })


# ---- User Guide cases (ug_*) -------------------------------------------

UG_META = {"createdDateTime": "2030-01-06T10:00:00.000Z",
           "modificationDateTime": "2030-01-06T10:00:00.000Z", "objectType": "EVENT"}
KW = [{"objectType": "EVENT_PAYLOAD_DESCRIPTOR", "payloadType": "IMPORT_CAPACITY_LIMIT",
       "units": "KW"}]


def ug(eid, **kw):
    ev = {"id": eid}
    ev.update(UG_META)
    ev["programID"] = "44"
    ev.update(kw)
    return ev


def ug_fixtures():
    # 7.3: "now" on the first interval = the event's own start
    write("ug_7.3_now_first_interval.json", ug(
        "ug73-first", eventName="now on the first interval",
        intervalPeriod={"start": "2030-01-07T12:00:00.000Z", "duration": "PT1H"},
        payloadDescriptors=KW,
        intervals=[{"id": 0, "intervalPeriod": {"start": "0001-01-01T00:00:00Z", "duration": "PT30M"},
                    "payloads": cap(10.0)},
                   {"id": 1, "payloads": cap(8.0)}]))
    # 7.3: no event period: "now" on the first interval is "do it now"
    write("ug_7.3_now_first_interval_no_event_period.json", ug(
        "ug73-first-now", eventName="now on the first interval, no event period",
        payloadDescriptors=KW,
        intervals=[{"id": 0, "intervalPeriod": {"start": "0001-01-01T00:00:00", "duration": "PT30M"},
                    "payloads": cap(10.0)},
                   {"id": 1, "intervalPeriod": {"start": "0001-01-01T00:00:00Z", "duration": "PT30M"},
                    "payloads": cap(8.0)}]))
    # 7.3: "now" on a later interval = the end of the one before
    write("ug_7.3_now_later_interval.json", ug(
        "ug73-later", eventName="now on later intervals",
        payloadDescriptors=KW,
        intervals=[{"id": 0, "intervalPeriod": {"start": "2030-01-07T12:00:00.000Z", "duration": "PT30M"},
                    "payloads": cap(10.0)},
                   {"id": 1, "intervalPeriod": {"start": "0001-01-01T00:00:00Z", "duration": "PT45M"},
                    "payloads": cap(8.0)},
                   {"id": 2, "intervalPeriod": {"start": "0001-01-01", "duration": "PT15M"},
                    "payloads": cap(6.0)}]))
    # 7.4-1: a later interval with a duration and no start
    write("ug_7.4_duration_without_start.json", ug(
        "ug74-variable", eventName="variableIntervalsEvent",
        intervalPeriod={"start": "2030-01-07T12:00:00.000Z", "duration": "PT1H"},
        payloadDescriptors=KW,
        intervals=[{"id": 0, "payloads": cap(10.0)},
                   {"id": 1, "intervalPeriod": {"duration": "PT2H"}, "payloads": cap(7.0)}]))
    # 7.9: deletion, as a 3.1 notification of an open-ended "do it now" event
    gone = ug("ug79-gone", eventName="deleted at the VTN",
              intervalPeriod={"start": "0001-01-01T00:00:00Z", "duration": "P9999Y"},
              payloadDescriptors=KW, intervals=[{"id": 0, "payloads": cap(12.0)}])
    write("ug_7.9_delete_notification.json",
          {"objectType": "EVENT", "operation": "DELETE", "object": gone})
    # 7.9: the other way to cancel: start and duration set to 0001-01-01, PT0S
    cancelled = dict(gone)
    cancelled["modificationDateTime"] = "2030-01-06T11:00:00.000Z"
    cancelled["eventName"] = "cancelled in place"
    cancelled["intervalPeriod"] = {"start": "0001-01-01", "duration": "PT0S"}
    write("ug_7.9_cancel_pt0s_update.json",
          {"objectType": "EVENT", "operation": "UPDATE", "object": cancelled})
    # 8.2-1 with the level written as a number with a fraction
    write("ug_8.2_simple_level_2_0.json", ug(
        "ug82-level-2", eventName="simpleEvent",
        intervalPeriod={"start": "2030-01-07T12:00:00.000Z", "duration": "PT4H"},
        payloadDescriptors=[{"objectType": "EVENT_PAYLOAD_DESCRIPTOR", "payloadType": "SIMPLE"}],
        intervals=[{"id": 0, "payloads": [{"type": "SIMPLE", "values": [2.0]}]}]))
    # 3.0.1 targets (valuesMap) naming a resource with a number
    ev = ug("ug-target-42", eventName="for resource 42",
            targets=[{"type": "RESOURCE_NAME", "values": [42]}],
            intervalPeriod={"start": "2030-01-07T12:00:00.000Z", "duration": "PT1H"},
            payloadDescriptors=KW, intervals=[{"id": 0, "payloads": cap(9.0)}])
    write("ug_target_resource_number_301.json", ev)
    # 8.10.1's capacity limit, at 0 KW
    write("ug_8.10.1_zero_kw.json", ug(
        "ug-zero-kw", eventName="capacity_limit_Event, 0 KW",
        intervalPeriod={"start": "2030-01-07T12:00:00.000Z", "duration": "PT30M"},
        payloadDescriptors=[KW[0], {"objectType": "EVENT_PAYLOAD_DESCRIPTOR",
                                    "payloadType": "EXPORT_CAPACITY_LIMIT", "units": "KW"}],
        intervals=[{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [0.0]},
                                          {"type": "EXPORT_CAPACITY_LIMIT", "values": [0.0]}]}]))
    # longer than 7 days: days, then weeks (the spec's pattern allows W)
    write("ug_longer_than_7_days.json", ug(
        "ug-24-days", eventName="24 days",
        payloadDescriptors=KW,
        intervals=[{"id": 0, "intervalPeriod": {"start": "2030-01-07T00:00:00.000Z", "duration": "P10D"},
                    "payloads": cap(30.0)},
                   {"id": 1, "intervalPeriod": {"start": "2030-01-17T00:00:00.000Z", "duration": "P2W"},
                    "payloads": cap(25.0)}]))
    # reports (7.7-2 aggregated; 8.3-4 usage), as a VEN posts them
    write("ug_report_7.7_aggregated.json", {
        "reportName": "aggregatedReport", "eventID": "1", "clientName": "myClient",
        "resources": [{"resourceName": "AGGREGATED_REPORT", "intervals": [
            {"id": 0, "payloads": [{"type": "USAGE", "values": [0.012]}]}]}]})
    write("ug_report_8.3_usage.json", {
        "reportName": "usageReport", "eventID": "1", "clientName": "myClient",
        "payloadDescriptors": [{"payloadType": "USAGE", "readingType": "DIRECT_READ",
                                "units": "KWH"}],
        "resources": [{"resourceName": "Resource_1",
                       "intervalPeriod": {"start": "2025-03-14T00:00:00.000Z", "duration": "PT1H"},
                       "intervals": [{"id": 0, "payloads": [
                           {"type": "USAGE", "values": [0.012]},
                           {"type": "USAGE", "values": [0.017]}]}]}]})


if __name__ == "__main__":
    olrs_fixtures()
    elaad_fixtures()
    ug_fixtures()
