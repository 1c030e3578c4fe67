/*
 * The record walk of reference_impl/protocol/record_walk.py, in C.
 *
 * walk(buf, pos, end, final, index, bad_total, bad, spec) -> (pos, index, bad_total, failure, message)
 *
 * The produce path walks every record of every batch (Kafka's LogValidator does); in Python the
 * walk costs about a microsecond a record, which the produce benchmark cannot afford. This is the
 * same walk, rule for rule and message for message: record_walk.walk_records_python is the
 * reference and a hypothesis test requires both to agree on valid and mutated batches.
 *
 * Hostile input: every read is checked against `end` (or the record's own end) before it is made;
 * nothing is allocated from a length read from the wire (the only allocations are the result
 * tuple, the message, and one small tuple per bad record, at most spec.errors_max of them).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum { OK = 0, INVALID = 1, TOO_LARGE = 2 };
enum { NO_KEY = 1, TIMESTAMP_OUT_OF_RANGE = 2, LOG_APPEND_TIME_FROM_PRODUCER = 3 };
enum { TIMESTAMPS_UNCHECKED = 0, TIMESTAMPS_IN_RANGE = 1, TIMESTAMPS_ALL_BAD = 2 };
enum { READ_OK = 0, READ_INCOMPLETE = 1, READ_TOO_LONG = 2 };

/* Kafka's ByteUtils.readVarint (width 32: at most 5 bytes) and readVarlong (width 64: at most 10
 * bytes): zigzag-decoded, bits past `width` dropped as Java's shifts drop them. */
static inline int read_zigzag(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int width, uint64_t *out) {
    uint64_t raw = 0;
    Py_ssize_t p = *pos;
    for (int shift = 0; shift < 7 * ((width + 6) / 7); shift += 7) {
        if (p >= end)
            return READ_INCOMPLETE;
        uint8_t c = b[p++];
        raw |= (uint64_t)(c & 0x7F) << shift;
        if (c < 0x80) {
            if (width < 64)
                raw &= (UINT64_C(1) << width) - 1;
            *pos = p;
            *out = (raw >> 1) ^ (UINT64_C(0) - (raw & 1u));
            return READ_OK;
        }
    }
    return READ_TOO_LONG;
}

static inline int read_varint32(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int32_t *out) {
    if (*pos < end && b[*pos] < 0x80) { /* most varints of a record are one byte: lengths, deltas, counts */
        uint8_t c = b[(*pos)++];
        *out = (int32_t)((c >> 1) ^ (0u - (c & 1u)));
        return READ_OK;
    }
    uint64_t value;
    int rc = read_zigzag(b, pos, end, 32, &value);
    *out = (int32_t)(uint32_t)value;
    return rc;
}

static inline int read_varint64(const uint8_t *b, Py_ssize_t *pos, Py_ssize_t end, int64_t *out) {
    uint64_t value;
    int rc = read_zigzag(b, pos, end, 64, &value);
    *out = (int64_t)value;
    return rc;
}

typedef struct {
    long long records_count;
    long long base_timestamp;
    int use_override;
    long long timestamp_override;
    int timestamp_mode;
    long long ts_low;
    long long ts_high;
    int compacted;
    long long record_max;
    long long errors_max;
} spec_t;

static PyObject *result(Py_ssize_t pos, long long index, long long bad_total, int failure, PyObject *message) {
    if (message == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(nLLiN)", pos, index, bad_total, failure, message);
    return out;
}

#define FAIL(code, ...) return result(start, index, bad_total, (code), PyUnicode_FromFormat(__VA_ARGS__))
#define FIELD(call)                                                                                 \
    do {                                                                                            \
        int rc_ = (call);                                                                           \
        if (rc_ == READ_INCOMPLETE)                                                                 \
            FAIL(INVALID, "record %lld: its fields run past its length %d", index, (int)length);     \
        if (rc_ == READ_TOO_LONG)                                                                   \
            FAIL(INVALID, "record %lld: a varint is too long", index);                              \
    } while (0)
#define SKIP(n)                                                                                     \
    do {                                                                                            \
        if ((n) > 0) {                                                                              \
            if ((Py_ssize_t)(n) > body_end - pos)                                                   \
                FAIL(INVALID, "record %lld: its fields run past its length %d", index, (int)length); \
            pos += (n);                                                                             \
        }                                                                                           \
    } while (0)

static PyObject *walk_buffer(const uint8_t *b, Py_ssize_t pos, Py_ssize_t end, int final, long long index,
                             long long bad_total, PyObject *bad, const spec_t *spec) {
    long long count = spec->records_count;
    Py_ssize_t start = pos;
    while (index < count) {
        start = pos;
        int32_t length;
        int rc = read_varint32(b, &pos, end, &length);
        if (rc == READ_INCOMPLETE) {
            if (!final)
                return result(start, index, bad_total, OK, PyUnicode_FromString(""));
            if (start == end)
                FAIL(INVALID, "the batch ends after %lld of its %lld records", index, count);
            FAIL(INVALID, "record %lld of %lld: the batch ends inside its length", index, count);
        }
        if (rc == READ_TOO_LONG)
            FAIL(INVALID, "record %lld: its length varint is too long", index);
        if (length < 0)
            FAIL(INVALID, "record %lld: negative length %d", index, (int)length);
        if ((long long)length > spec->record_max)
            FAIL(TOO_LARGE, "record %lld declares %d bytes, more than the %lld allowed", index, (int)length,
                 spec->record_max);
        if ((Py_ssize_t)length > end - pos) {
            if (final)
                FAIL(INVALID, "record %lld declares %d bytes, only %zd remain in the batch", index, (int)length,
                     end - pos);
            return result(start, index, bad_total, OK, PyUnicode_FromString(""));
        }
        Py_ssize_t body_end = pos + length;
        if (pos >= body_end)
            FAIL(INVALID, "record %lld: its fields run past its length %d", index, (int)length);
        pos += 1; /* attributes: unused in v2 */
        int64_t ts_delta;
        int32_t offset_delta, key_length, value_length, headers;
        FIELD(read_varint64(b, &pos, body_end, &ts_delta));
        FIELD(read_varint32(b, &pos, body_end, &offset_delta));
        if ((long long)offset_delta != index)
            FAIL(INVALID, "record %lld has offset delta %d, expected %lld", index, (int)offset_delta, index);
        FIELD(read_varint32(b, &pos, body_end, &key_length));
        SKIP(key_length);
        FIELD(read_varint32(b, &pos, body_end, &value_length));
        SKIP(value_length);
        FIELD(read_varint32(b, &pos, body_end, &headers));
        if (headers < 0 || (Py_ssize_t)headers > body_end - pos)
            FAIL(INVALID, "record %lld: invalid header count %d", index, (int)headers);
        for (int32_t h = 0; h < headers; h++) {
            int32_t header_key_length, header_value_length;
            FIELD(read_varint32(b, &pos, body_end, &header_key_length));
            if (header_key_length < 0)
                FAIL(INVALID, "record %lld: a header key is null", index);
            SKIP(header_key_length);
            FIELD(read_varint32(b, &pos, body_end, &header_value_length));
            SKIP(header_value_length);
        }
        if (pos != body_end)
            FAIL(INVALID, "record %lld declares %d bytes but its fields take %zd", index, (int)length,
                 pos - body_end + length);
        int kind = 0;
        int64_t timestamp = spec->use_override
                                ? (int64_t)spec->timestamp_override
                                : (int64_t)((uint64_t)spec->base_timestamp + (uint64_t)ts_delta);
        if (spec->compacted && key_length < 0) {
            kind = NO_KEY;
        } else if (spec->timestamp_mode == TIMESTAMPS_IN_RANGE) {
            if (timestamp == -1) {
                if (spec->use_override)
                    kind = LOG_APPEND_TIME_FROM_PRODUCER;
            } else if (timestamp < spec->ts_low || timestamp > spec->ts_high) {
                kind = TIMESTAMP_OUT_OF_RANGE;
            }
        } else if (spec->timestamp_mode == TIMESTAMPS_ALL_BAD) {
            kind = LOG_APPEND_TIME_FROM_PRODUCER;
        }
        if (kind) {
            if (bad_total < spec->errors_max) {
                PyObject *entry = Py_BuildValue("(LiL)", index, kind, (long long)timestamp);
                if (entry == NULL || PyList_Append(bad, entry) < 0) {
                    Py_XDECREF(entry);
                    return NULL;
                }
                Py_DECREF(entry);
            }
            bad_total += 1;
        }
        index += 1;
    }
    if (pos < end) {
        start = pos;
        FAIL(INVALID, "%zd bytes follow the last of the batch's %lld records", end - pos, count);
    }
    return result(pos, index, bad_total, OK, PyUnicode_FromString(""));
}

static PyObject *walk(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos, end;
    int final;
    long long index, bad_total;
    PyObject *bad, *spec_obj;
    spec_t spec;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nnpLLO!O!", &view, &pos, &end, &final, &index, &bad_total, &PyList_Type,
                          &bad, &PyTuple_Type, &spec_obj))
        return NULL;
    if (!PyArg_ParseTuple(spec_obj, "LLpLiLLpLL", &spec.records_count, &spec.base_timestamp,
                          &spec.use_override, &spec.timestamp_override, &spec.timestamp_mode, &spec.ts_low,
                          &spec.ts_high, &spec.compacted, &spec.record_max, &spec.errors_max)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (pos < 0 || end < pos || end > view.len) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "walk range [%zd, %zd) is outside a buffer of %zd bytes", pos, end,
                     view.len);
        return NULL;
    }
    PyObject *out = walk_buffer((const uint8_t *)view.buf, pos, end, final, index, bad_total, bad, &spec);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(buf, pos, end, final, index, bad_total, bad, spec) -> (pos, index, bad_total, failure, message)\n"
     "The C twin of reference_impl.protocol.record_walk.walk_records_python."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_record_walk",
    .m_doc = "One pass over a record batch's records (see record_walk.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__record_walk(void) { return PyModule_Create(&module); }
