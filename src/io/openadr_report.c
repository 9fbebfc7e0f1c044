/* openadr_report.c — what the OpenADR 3 specification requires of a REPORT
 * a VEN POSTs (openadr.h, pfi_oadr_report_check), checked before it is sent
 * so that a strict VTN never sees a report it must refuse (issue 29 item 6:
 * a step id "ID.0" as eventID failed the objectID pattern and every report
 * of a multi-interval event was refused).
 *
 * From tests/openadr3/spec/{3.1.1,3.0.1}/openadr3.yaml: 3.1.1 POST /reports
 * takes a reportRequest (required eventID, clientName, resources); 3.0.1 a
 * report (required programID, eventID, clientName, resources); eventID and
 * programID are objectIDs (1..128 of [A-Za-z0-9_-]); clientName 1..128
 * characters; each resource has a resourceName and intervals; each interval
 * an integer id (int32) and payloads (each a type string and a values
 * array); an intervalPeriod, where one is given, has a start (dateTime);
 * payloadDescriptors, where given, are objects with objectType
 * REPORT_PAYLOAD_DESCRIPTOR and a payloadType. */
#include <ctype.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "openadr.h"

static int object_id_ok(json_t *v)
{
    const char *s = json_string_value(v);
    if (!s) return 0;
    size_t n = strlen(s);
    if (n < 1 || n > PFI_OADR_ID_MAX) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-') return 0;
    return 1;
}

static pfi_status interval_check(json_t *x, size_t r, size_t i, pfi_error *err)
{
    json_t *id = json_object_get(x, "id"), *pl = json_object_get(x, "payloads");
    if (!json_is_integer(id) || json_integer_value(id) < INT32_MIN ||
        json_integer_value(id) > INT32_MAX)
        return pfi_errorf(err, PFI_EINVAL, "resources[%zu].intervals[%zu].id: expected an int32", r,
                          i);
    json_t *ip = json_object_get(x, "intervalPeriod");
    double t;
    if (ip && !json_is_null(ip) &&
        (!json_is_string(json_object_get(ip, "start")) ||
         pfi_rfc3339_parse(json_string_value(json_object_get(ip, "start")), &t)))
        return pfi_errorf(err, PFI_EINVAL,
                          "resources[%zu].intervals[%zu].intervalPeriod.start: required (RFC "
                          "3339)",
                          r, i);
    if (!json_is_array(pl))
        return pfi_errorf(err, PFI_EINVAL, "resources[%zu].intervals[%zu].payloads: required", r,
                          i);
    size_t k;
    json_t *p;
    json_array_foreach(pl, k, p)
    {
        if (!json_is_string(json_object_get(p, "type")) ||
            !json_is_array(json_object_get(p, "values")))
            return pfi_errorf(err, PFI_EINVAL,
                              "resources[%zu].intervals[%zu].payloads[%zu]: expected type and "
                              "values",
                              r, i, k);
    }
    return PFI_OK;
}

static pfi_status resources_check(json_t *res, pfi_error *err)
{
    if (!json_is_array(res)) return pfi_errorf(err, PFI_EINVAL, "resources: required, an array");
    size_t r, i;
    json_t *x, *iv;
    json_array_foreach(res, r, x)
    {
        if (!json_is_string(json_object_get(x, "resourceName")))
            return pfi_errorf(err, PFI_EINVAL, "resources[%zu].resourceName: required", r);
        json_t *ivs = json_object_get(x, "intervals");
        if (!json_is_array(ivs))
            return pfi_errorf(err, PFI_EINVAL, "resources[%zu].intervals: required", r);
        json_array_foreach(ivs, i, iv)
        {
            pfi_status st = interval_check(iv, r, i, err);
            if (st) return st;
        }
    }
    return PFI_OK;
}

pfi_status pfi_oadr_report_check(const char *json, size_t len, pfi_oadr_version v, pfi_error *err)
{
    json_t *o = json_loadb(json, len, 0, NULL);
    pfi_status st = PFI_OK;
    const char *name = json_string_value(json_object_get(o, "clientName"));
    json_t *pd = json_object_get(o, "payloadDescriptors");
    if (!json_is_object(o)) st = pfi_errorf(err, PFI_EINVAL, "a REPORT is a JSON object");
    else if (!object_id_ok(json_object_get(o, "eventID")))
        st = pfi_errorf(err, PFI_EINVAL, "eventID: required, an objectID (1..128 of A-Za-z0-9_-)");
    else if (v == PFI_OADR_V3_0_1 && !object_id_ok(json_object_get(o, "programID")))
        st = pfi_errorf(err, PFI_EINVAL, "programID: required (3.0.1), an objectID");
    else if (!name || !name[0] || strlen(name) > 128)
        st = pfi_errorf(err, PFI_EINVAL, "clientName: required, 1..128 characters");
    else if (pd && !json_is_null(pd) && !json_is_array(pd))
        st = pfi_errorf(err, PFI_EINVAL, "payloadDescriptors: expected an array");
    else st = resources_check(json_object_get(o, "resources"), err);
    size_t i;
    json_t *d;
    if (!st && json_is_array(pd)) json_array_foreach(pd, i, d)
        {
            const char *ot = json_string_value(json_object_get(d, "objectType"));
            if (!st && (!ot || strcmp(ot, "REPORT_PAYLOAD_DESCRIPTOR") ||
                        !json_is_string(json_object_get(d, "payloadType"))))
                st = pfi_errorf(err, PFI_EINVAL,
                                "payloadDescriptors[%zu]: expected objectType "
                                "REPORT_PAYLOAD_DESCRIPTOR and a payloadType",
                                i);
        }
    json_decref(o);
    return st;
}
