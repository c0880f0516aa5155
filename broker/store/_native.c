/*
 * The store's per-message hot path, compiled: one call turns a SEND_BATCH_MESSAGE body into the
 * commitlog records of all its messages (CRC32 of each body, properties decoded for the dispatchers,
 * tags hash for the consume queue), one call patches queue and commitlog offsets into those records,
 * one call makes their offset message ids; one call writes the record of a single message, one makes
 * the properties it is stored with (WAIT dropped, the cluster added, decoded for the dispatchers); two calls
 * hash and write the index entries of a batch or of one message. The GIL is held throughout: each
 * call is short and allocates Python objects as it goes.
 *
 * pyrocketmq.broker.store.native is the Python side: it loads this module when it was built and
 * otherwise runs pure-Python code that writes the same bytes (tests compare the two).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_PROPERTIES_BYTES 32767
#define MAX_TOPIC_BYTES 127
#define BATCH_ITEM_HEAD 20
#define SYSFLAG_BORNHOST_V6 0x10
#define SYSFLAG_STOREHOST_V6 0x20

/* -- CRC32 (zlib's: reflected, polynomial 0xEDB88320), slicing by 8 ------------------------------ */

static uint32_t crc_table[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = crc_table[0][crc_table[t - 1][i] & 0xFF] ^ (crc_table[t - 1][i] >> 8);
}

static uint32_t crc32_bytes(const unsigned char *p, Py_ssize_t n) {
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
            crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        c = crc_table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* -- big-endian helpers ---------------------------------------------------------------------------- */

static inline void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16); p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}

static inline void put64(unsigned char *p, uint64_t v) {
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
}

static inline uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* -- Java String.hashCode over UTF-16 code units --------------------------------------------------- */

static uint32_t java_hash_extend(uint32_t h, PyObject *s) {
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (ch > 0xFFFF) {
            ch -= 0x10000;
            h = h * 31u + (0xD800u + (ch >> 10));
            h = h * 31u + (0xDC00u + (ch & 0x3FF));
        } else {
            h = h * 31u + ch;
        }
    }
    return h;
}

static PyObject *py_java_hash(PyObject *self, PyObject *args) {
    PyObject *s;
    unsigned long long start = 0;
    if (!PyArg_ParseTuple(args, "U|K", &s, &start))
        return NULL;
    return PyLong_FromUnsignedLong(java_hash_extend((uint32_t)start, s));
}

/* -- properties ------------------------------------------------------------------------------------ */

/* Decode "k\x01v\x02k\x01v\x02" into a new dict (pairs with an empty key or value, or no \x01, are
 * skipped; a value may hold \x01: the pair splits at the first one), as decode_properties does. */
static PyObject *decode_props(const unsigned char *p, Py_ssize_t n) {
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    Py_ssize_t i = 0;
    while (i < n) {
        const unsigned char *end = memchr(p + i, 0x02, (size_t)(n - i));
        Py_ssize_t stop = end ? (Py_ssize_t)(end - p) : n;
        const unsigned char *sep = memchr(p + i, 0x01, (size_t)(stop - i));
        if (sep != NULL) {
            Py_ssize_t klen = (Py_ssize_t)(sep - (p + i)), vstart = klen + 1 + i;
            if (klen > 0 && stop > vstart) {
                PyObject *k = PyUnicode_DecodeUTF8((const char *)p + i, klen, "replace");
                PyObject *v = k ? PyUnicode_DecodeUTF8((const char *)p + vstart, stop - vstart, "replace") : NULL;
                if (v == NULL || PyDict_SetItem(d, k, v) < 0) {
                    Py_XDECREF(k);
                    Py_XDECREF(v);
                    Py_DECREF(d);
                    return NULL;
                }
                Py_DECREF(k);
                Py_DECREF(v);
            }
        }
        i = stop + 1;
    }
    return d;
}

/* -- reading a record's fields from the object the store was handed (a MessageInner) --------------- */

static PyObject *a_topic, *a_body, *a_flag, *a_properties_bytes, *a_queue_id, *a_sys_flag, *a_born_timestamp,
    *a_born_host, *a_store_host, *a_reconsume_times, *a_prepared, *a_tags_code;

static int names_init(void) {
    return (a_topic = PyUnicode_InternFromString("topic")) && (a_body = PyUnicode_InternFromString("body")) &&
                   (a_flag = PyUnicode_InternFromString("flag")) &&
                   (a_properties_bytes = PyUnicode_InternFromString("properties_bytes")) &&
                   (a_queue_id = PyUnicode_InternFromString("queue_id")) &&
                   (a_sys_flag = PyUnicode_InternFromString("sys_flag")) &&
                   (a_born_timestamp = PyUnicode_InternFromString("born_timestamp")) &&
                   (a_born_host = PyUnicode_InternFromString("born_host")) &&
                   (a_store_host = PyUnicode_InternFromString("store_host")) &&
                   (a_reconsume_times = PyUnicode_InternFromString("reconsume_times")) &&
                   (a_prepared = PyUnicode_InternFromString("prepared_transaction_offset")) &&
                   (a_tags_code = PyUnicode_InternFromString("tags_code"))
               ? 0
               : -1;
}

/* The attribute ``name`` of ``o`` as a C long long; -1 with an exception set when missing or not an int. */
static int attr_ll(PyObject *o, PyObject *name, long long *out) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* The attribute ``name`` of ``o`` as a C int (OverflowError outside its range, as the "i" format). */
static int attr_int(PyObject *o, PyObject *name, int *out) {
    long long v;
    if (attr_ll(o, name, &v) < 0)
        return -1;
    if (v < INT32_MIN || v > INT32_MAX) {
        PyErr_Format(PyExc_OverflowError, "%U of %lld does not fit a 32-bit field", name, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* The attribute ``name`` of ``o`` as a buffer (released by the caller). */
static int attr_buf(PyObject *o, PyObject *name, Py_buffer *view) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    int rc = PyObject_GetBuffer(v, view, PyBUF_SIMPLE);
    Py_DECREF(v); /* the view keeps its own reference */
    return rc;
}

/* A message's topic (a str) as UTF-8 in ``view``: the caller releases it like any buffer. */
static int attr_topic(PyObject *o, Py_buffer *view) {
    PyObject *v = PyObject_GetAttr(o, a_topic);
    if (v == NULL)
        return -1;
    if (!PyUnicode_Check(v)) {
        Py_DECREF(v);
        PyErr_SetString(PyExc_TypeError, "the message's topic is not a str");
        return -1;
    }
    Py_ssize_t n;
    const char *utf8 = PyUnicode_AsUTF8AndSize(v, &n);
    if (utf8 == NULL) {
        Py_DECREF(v);
        return -1;
    }
    int rc = PyBuffer_FillInfo(view, v, (void *)utf8, n, 1, PyBUF_SIMPLE); /* holds the str while in use */
    Py_DECREF(v);
    return rc;
}

/* The buffers a record is written from; ``n`` of them filled (released by ``release_all``). */
typedef struct {
    Py_buffer b[6];
    int n;
} Buffers;

static Py_buffer *next_buf(Buffers *bs) { return &bs->b[bs->n]; }

static int took(Buffers *bs, int rc) {
    if (rc == 0)
        bs->n++;
    return rc;
}

static void release_all(Buffers *bs) {
    for (int i = 0; i < bs->n; i++)
        PyBuffer_Release(&bs->b[i]);
    bs->n = 0;
}

/* -- one record ----------------------------------------------------------------------------------- */

/* Writes the record of one message at ``r`` (``size`` bytes, QUEUEOFFSET and PHYSICALOFFSET zero). Its
 * properties are ``props`` (``plen`` bytes), a 0x02 separator when ``add_sep``, then ``tail`` (``tail_len``
 * bytes: a batch's own properties): ``props_len`` bytes in all. The caller checked every length. */
static void write_record(unsigned char *r, Py_ssize_t size, unsigned int magic, const unsigned char *body, Py_ssize_t blen,
                         int queue_id, int flag, int sys_flag, long long born_ts, const Py_buffer *born_host,
                         long long store_ts, const Py_buffer *store_host, int reconsume_times, long long prepared,
                         const Py_buffer *topic, Py_ssize_t props_len, const unsigned char *props, Py_ssize_t plen,
                         int add_sep, const void *tail, Py_ssize_t tail_len) {
    put32(r, (uint32_t)size);
    put32(r + 4, magic);
    put32(r + 8, crc32_bytes(body, blen) & 0x7FFFFFFFu);
    put32(r + 12, (uint32_t)queue_id);
    put32(r + 16, (uint32_t)flag);
    put64(r + 20, 0);
    put64(r + 28, 0);
    put32(r + 36, (uint32_t)sys_flag);
    put64(r + 40, (uint64_t)born_ts);
    r += 48;
    memcpy(r, born_host->buf, (size_t)born_host->len);
    r += born_host->len;
    put64(r, (uint64_t)store_ts);
    r += 8;
    memcpy(r, store_host->buf, (size_t)store_host->len);
    r += store_host->len;
    put32(r, (uint32_t)reconsume_times);
    put64(r + 4, (uint64_t)prepared);
    put32(r + 12, (uint32_t)blen);
    r += 16;
    memcpy(r, body, (size_t)blen);
    r += blen;
    *r++ = (unsigned char)topic->len;
    memcpy(r, topic->buf, (size_t)topic->len);
    r += topic->len;
    *r++ = (unsigned char)(props_len >> 8);
    *r++ = (unsigned char)props_len;
    if (plen)
        memcpy(r, props, (size_t)plen);
    r += plen;
    if (add_sep)
        *r++ = 0x02;
    if (tail_len)
        memcpy(r, tail, (size_t)tail_len);
}

/* -- encode_batch ---------------------------------------------------------------------------------- */

/* encode_batch(batch, sys_flag, store_ts, max_body, magic): ``batch`` is the store's record of the send (a
 * MessageInner): its body is the SEND_BATCH_MESSAGE body, its properties_bytes the batch's own properties. */
static PyObject *py_encode_batch(PyObject *self, PyObject *args) {
    PyObject *batch;
    int queue_id, sys_flag, reconsume_times;
    long long born_ts, store_ts, max_body;
    unsigned int magic;
    if (!PyArg_ParseTuple(args, "OiLLI", &batch, &sys_flag, &store_ts, &max_body, &magic))
        return NULL;
    PyObject *block = NULL, *metas = NULL, *tags_key = NULL, *result = NULL;
    Buffers bs = {.n = 0};
    if (took(&bs, attr_buf(batch, a_body, next_buf(&bs))) < 0 || took(&bs, attr_topic(batch, next_buf(&bs))) < 0 ||
        took(&bs, attr_buf(batch, a_properties_bytes, next_buf(&bs))) < 0 ||
        took(&bs, attr_buf(batch, a_born_host, next_buf(&bs))) < 0 ||
        took(&bs, attr_buf(batch, a_store_host, next_buf(&bs))) < 0 || attr_int(batch, a_queue_id, &queue_id) < 0 ||
        attr_ll(batch, a_born_timestamp, &born_ts) < 0 || attr_int(batch, a_reconsume_times, &reconsume_times) < 0)
        goto done;
    Py_buffer data = bs.b[0], topic = bs.b[1], batch_props = bs.b[2], born_host = bs.b[3], store_host = bs.b[4];
    const unsigned char *src = data.buf;
    Py_ssize_t n = data.len, pos = 0, total = 0;
    if (topic.len > MAX_TOPIC_BYTES) {
        PyErr_Format(PyExc_ValueError, "topic is %zd bytes; at most %d fit in a record", topic.len, MAX_TOPIC_BYTES);
        goto done;
    }
    Py_ssize_t fixed = 48 + born_host.len + 8 + store_host.len + 16 + 1 + topic.len + 2;
    /* pass 1: check every entry and size the block */
    while (pos < n) {
        if (n - pos < 22) {
            PyErr_Format(PyExc_ValueError, "batch entry at %zd is torn (%zd bytes left)", pos, n - pos);
            goto done;
        }
        int32_t size = (int32_t)get32(src + pos), blen = (int32_t)get32(src + pos + 16);
        if (blen < 0 || size < 22 + (int64_t)blen || pos + (int64_t)size > n) {
            PyErr_Format(PyExc_ValueError, "batch entry at %zd: size %d, body %d, %zd bytes left", pos, size, blen, n - pos);
            goto done;
        }
        Py_ssize_t plen = (Py_ssize_t)src[pos + 20 + blen] << 8 | src[pos + 21 + blen];
        if (size != 22 + blen + plen) {
            PyErr_Format(PyExc_ValueError, "batch entry at %zd: size %d != 22 + body %d + props %zd", pos, size, blen, plen);
            goto done;
        }
        if (blen > max_body) {
            PyErr_Format(PyExc_ValueError, "a message body of %d bytes is over maxMessageSize %lld", blen, max_body);
            goto done;
        }
        Py_ssize_t props_len = plen + (plen > 0 && src[pos + 21 + blen + plen] != 0x02 ? 1 : 0) + batch_props.len;
        if (props_len > MAX_PROPERTIES_BYTES) {
            PyErr_Format(PyExc_OverflowError, "properties are %zd bytes; at most %d fit in a record", props_len,
                         MAX_PROPERTIES_BYTES);
            goto done;
        }
        total += fixed + blen + props_len;
        pos += size;
    }
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "empty batch");
        goto done;
    }
    block = PyByteArray_FromStringAndSize(NULL, total);
    metas = PyList_New(0);
    tags_key = PyUnicode_InternFromString("TAGS");
    if (block == NULL || metas == NULL || tags_key == NULL)
        goto done;
    unsigned char *out = (unsigned char *)PyByteArray_AS_STRING(block);
    /* pass 2: write the records */
    pos = 0;
    while (pos < n) {
        int32_t size = (int32_t)get32(src + pos), flag = (int32_t)get32(src + pos + 12), blen = (int32_t)get32(src + pos + 16);
        const unsigned char *body = src + pos + BATCH_ITEM_HEAD;
        Py_ssize_t plen = (Py_ssize_t)src[pos + 20 + blen] << 8 | src[pos + 21 + blen];
        const unsigned char *props = src + pos + 22 + blen;
        int add_sep = plen > 0 && props[plen - 1] != 0x02;
        Py_ssize_t props_len = plen + add_sep + batch_props.len;
        Py_ssize_t rec = fixed + blen + props_len;
        write_record(out, rec, magic, body, blen, queue_id, flag, sys_flag, born_ts, &born_host, store_ts, &store_host,
                     reconsume_times, 0, &topic, props_len, props, plen, add_sep, batch_props.buf, batch_props.len);
        out += rec;

        PyObject *d = decode_props(props, plen);
        if (d == NULL)
            goto done;
        long long tags = 0;
        PyObject *tag = PyDict_GetItemWithError(d, tags_key);
        if (tag != NULL && PyUnicode_GET_LENGTH(tag) > 0)
            tags = (int32_t)java_hash_extend(0, tag);
        else if (PyErr_Occurred()) {
            Py_DECREF(d);
            goto done;
        }
        PyObject *meta = Py_BuildValue("(nLN)", rec, tags, d);
        if (meta == NULL || PyList_Append(metas, meta) < 0) {
            Py_XDECREF(meta);
            goto done;
        }
        Py_DECREF(meta);
        pos += size;
    }
    result = PyTuple_Pack(2, block, metas);
done:
    Py_XDECREF(block);
    Py_XDECREF(metas);
    Py_XDECREF(tags_key);
    release_all(&bs);
    return result;
}

/* -- encode_record: one message's record ------------------------------------------------------------ */

/* encode_record(msg, topic, properties, sys_flag, born_host, store_host, store_ts, magic) -> bytearray
 * The record of one message with QUEUEOFFSET and PHYSICALOFFSET zero, as message.encode_record writes it
 * (the same checks, the same ValueErrors); ``msg`` gives its body, flag, queue id, born timestamp,
 * reconsume times and prepared transaction offset. */
static PyObject *py_encode_record(PyObject *self, PyObject *args) {
    PyObject *msg;
    Py_buffer topic, props, born_host, store_host;
    int flag, queue_id, sys_flag, reconsume_times;
    long long born_ts, store_ts, prepared;
    unsigned int magic;
    if (!PyArg_ParseTuple(args, "Oy*y*iy*y*LI", &msg, &topic, &props, &sys_flag, &born_host, &store_host, &store_ts,
                          &magic))
        return NULL;
    PyObject *rec = NULL;
    Buffers bs = {.n = 0};
    if (took(&bs, attr_buf(msg, a_body, next_buf(&bs))) < 0 || attr_int(msg, a_flag, &flag) < 0 ||
        attr_int(msg, a_queue_id, &queue_id) < 0 || attr_ll(msg, a_born_timestamp, &born_ts) < 0 ||
        attr_int(msg, a_reconsume_times, &reconsume_times) < 0 || attr_ll(msg, a_prepared, &prepared) < 0)
        goto done;
    Py_buffer body = bs.b[0];
    if (topic.len > MAX_TOPIC_BYTES) {
        PyErr_Format(PyExc_ValueError, "topic is %zd bytes; at most %d fit in a record", topic.len, MAX_TOPIC_BYTES);
        goto done;
    }
    if (props.len > MAX_PROPERTIES_BYTES) {
        PyErr_Format(PyExc_ValueError, "properties are %zd bytes; at most %d fit in a record", props.len,
                     MAX_PROPERTIES_BYTES);
        goto done;
    }
    if (born_host.len != ((sys_flag & SYSFLAG_BORNHOST_V6) ? 20 : 8)) {
        PyErr_Format(PyExc_ValueError, "born host of %zd bytes does not match sys_flag 0x%x", born_host.len, sys_flag);
        goto done;
    }
    if (store_host.len != ((sys_flag & SYSFLAG_STOREHOST_V6) ? 20 : 8)) {
        PyErr_Format(PyExc_ValueError, "store host of %zd bytes does not match sys_flag 0x%x", store_host.len, sys_flag);
        goto done;
    }
    Py_ssize_t size = 48 + born_host.len + 8 + store_host.len + 16 + body.len + 3 + topic.len + props.len;
    if (size > 0x7FFFFFFF) {
        PyErr_SetString(PyExc_ValueError, "a record over 2 GiB");
        goto done;
    }
    rec = PyByteArray_FromStringAndSize(NULL, size);
    if (rec == NULL)
        goto done;
    write_record((unsigned char *)PyByteArray_AS_STRING(rec), size, magic, body.buf, body.len, queue_id, flag, sys_flag,
                 born_ts, &born_host, store_ts, &store_host, reconsume_times, prepared, &topic, props.len, props.buf,
                 props.len, 0, NULL, 0);
done:
    release_all(&bs);
    PyBuffer_Release(&topic);
    PyBuffer_Release(&props);
    PyBuffer_Release(&born_host);
    PyBuffer_Release(&store_host);
    return rec;
}

/* -- patch_offsets: QUEUEOFFSET and PHYSICALOFFSET of consecutive records -------------------------- */

static PyObject *py_patch_offsets(PyObject *self, PyObject *args) {
    Py_buffer buf;
    long long qoff, phys;
    if (!PyArg_ParseTuple(args, "w*LL", &buf, &qoff, &phys))
        return NULL;
    unsigned char *p = buf.buf;
    Py_ssize_t pos = 0;
    while (pos + 36 <= buf.len) {
        uint32_t size = get32(p + pos);
        if (size < 36 || pos + (Py_ssize_t)size > buf.len) {
            PyBuffer_Release(&buf);
            PyErr_Format(PyExc_ValueError, "record at %zd: size %u does not fit", pos, size);
            return NULL;
        }
        put64(p + pos + 20, (uint64_t)qoff++);
        put64(p + pos + 28, (uint64_t)(phys + pos));
        pos += size;
    }
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
}

/* -- offset_msg_ids: "HOSTPORT+OFFSET" hex of each record, comma-joined ---------------------------- */

static const char hex_digits[] = "0123456789ABCDEF";

/* The offset message id of the record at ``phys`` (store host then offset, upper-case hex) at ``o``;
 * returns the end. */
static Py_UCS1 *write_msg_id(Py_UCS1 *o, const unsigned char *h, Py_ssize_t hlen, long long phys) {
    for (Py_ssize_t k = 0; k < hlen; k++) {
        *o++ = hex_digits[h[k] >> 4];
        *o++ = hex_digits[h[k] & 15];
    }
    for (int k = 7; k >= 0; k--) {
        unsigned char b = (unsigned char)((uint64_t)phys >> (8 * k));
        *o++ = hex_digits[b >> 4];
        *o++ = hex_digits[b & 15];
    }
    return o;
}

static PyObject *py_offset_msg_ids(PyObject *self, PyObject *args) {
    Py_buffer host;
    long long phys;
    PyObject *sizes;
    if (!PyArg_ParseTuple(args, "y*LO!", &host, &phys, &PyList_Type, &sizes))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(sizes), one = (host.len + 8) * 2;
    Py_ssize_t len = count ? count * (one + 1) - 1 : 0;
    PyObject *s = PyUnicode_New(len, 127);
    if (s == NULL) {
        PyBuffer_Release(&host);
        return NULL;
    }
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(s);
    const unsigned char *h = host.buf;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (i)
            *o++ = ',';
        o = write_msg_id(o, h, host.len, phys);
        long long size = PyLong_AsLongLong(PyList_GET_ITEM(sizes, i));
        if (size == -1 && PyErr_Occurred()) {
            Py_DECREF(s);
            PyBuffer_Release(&host);
            return NULL;
        }
        phys += size;
    }
    PyBuffer_Release(&host);
    return s;
}

/* -- put_record: a single send's record and consume-queue unit, written in place ------------------- */

/* put_record(segment, position, segment_offset, units, unit_position, msg, queue_offset, store_ts, magic, max_size)
 *   -> (size, offset message id) | None
 * The record of one message ``msg`` (a MessageInner: topic, body, flag, properties_bytes, queue id, sys flag,
 * born timestamp and host, store host, reconsume times, tags code) (prepared offset 0; the BORNHOST_V6 / STOREHOST_V6 bits of ``sys_flag`` set from
 * the hosts' lengths) written at ``position`` of the commitlog segment ``segment`` (which starts at commitlog
 * offset ``segment_offset``) with its QUEUEOFFSET and PHYSICALOFFSET, and its consume-queue unit (offset,
 * size, tags code) at ``unit_position`` of ``units``. None, with nothing written, when this is not such a
 * plain put: the record would not leave a segment end's 8 bytes free, the unit does not fit, the record is
 * over ``max_size``, or a field does not fit a record (the caller's general path says which). */
static PyObject *py_put_record(PyObject *self, PyObject *args) {
    PyObject *msg;
    Py_buffer seg, units;
    Py_ssize_t pos, unit_pos;
    long long seg_offset, born_ts, store_ts, qoff, tags, max_size;
    int flag, queue_id, sys_flag, reconsume_times;
    unsigned int magic;
    if (!PyArg_ParseTuple(args, "w*nLw*nOLLIL", &seg, &pos, &seg_offset, &units, &unit_pos, &msg, &qoff, &store_ts,
                          &magic, &max_size))
        return NULL;
    PyObject *result = NULL;
    Buffers bs = {.n = 0};
    if (took(&bs, attr_topic(msg, next_buf(&bs))) < 0 || took(&bs, attr_buf(msg, a_body, next_buf(&bs))) < 0 ||
        took(&bs, attr_buf(msg, a_properties_bytes, next_buf(&bs))) < 0 ||
        took(&bs, attr_buf(msg, a_born_host, next_buf(&bs))) < 0 ||
        took(&bs, attr_buf(msg, a_store_host, next_buf(&bs))) < 0 || attr_int(msg, a_flag, &flag) < 0 ||
        attr_int(msg, a_queue_id, &queue_id) < 0 || attr_int(msg, a_sys_flag, &sys_flag) < 0 ||
        attr_ll(msg, a_born_timestamp, &born_ts) < 0 || attr_int(msg, a_reconsume_times, &reconsume_times) < 0 ||
        attr_ll(msg, a_tags_code, &tags) < 0)
        goto done;
    Py_buffer topic = bs.b[0], body = bs.b[1], props = bs.b[2], born_host = bs.b[3], store_host = bs.b[4];
    sys_flag &= ~(SYSFLAG_BORNHOST_V6 | SYSFLAG_STOREHOST_V6);
    if (born_host.len == 20)
        sys_flag |= SYSFLAG_BORNHOST_V6;
    if (store_host.len == 20)
        sys_flag |= SYSFLAG_STOREHOST_V6;
    Py_ssize_t size = 48 + born_host.len + 8 + store_host.len + 16 + body.len + 3 + topic.len + props.len;
    int plain = topic.len <= MAX_TOPIC_BYTES && props.len <= MAX_PROPERTIES_BYTES &&
                (born_host.len == 8 || born_host.len == 20) && (store_host.len == 8 || store_host.len == 20) &&
                size <= max_size && size <= 0x7FFFFFFF && pos >= 0 && pos <= seg.len && size + 8 <= seg.len - pos &&
                unit_pos >= 0 && unit_pos <= units.len - 20;
    if (!plain) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    unsigned char *r = (unsigned char *)seg.buf + pos;
    long long phys = seg_offset + pos;
    write_record(r, size, magic, body.buf, body.len, queue_id, flag, sys_flag, born_ts, &born_host, store_ts,
                 &store_host, reconsume_times, 0, &topic, props.len, props.buf, props.len, 0, NULL, 0);
    put64(r + 20, (uint64_t)qoff);
    put64(r + 28, (uint64_t)phys);
    unsigned char *u = (unsigned char *)units.buf + unit_pos;
    put64(u, (uint64_t)phys);
    put32(u + 8, (uint32_t)size);
    put64(u + 12, (uint64_t)tags);
    PyObject *msg_id = PyUnicode_New((store_host.len + 8) * 2, 127);
    if (msg_id == NULL)
        goto done;
    write_msg_id(PyUnicode_1BYTE_DATA(msg_id), store_host.buf, store_host.len, phys);
    result = Py_BuildValue("(nN)", size, msg_id);
done:
    PyBuffer_Release(&seg);
    PyBuffer_Release(&units);
    release_all(&bs);
    return result;
}

/* -- dispatching a batch: consume-queue units and index entries ----------------------------------- */

/* A batch's metas list: [(record size, tags code, properties)], in commitlog order. */
static int meta_at(PyObject *metas, Py_ssize_t i, long long *size, long long *tags, PyObject **props) {
    PyObject *m = PyList_GET_ITEM(metas, i);
    if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) != 3) {
        PyErr_SetString(PyExc_TypeError, "a batch meta is a (size, tags_code, properties) tuple");
        return -1;
    }
    *size = PyLong_AsLongLong(PyTuple_GET_ITEM(m, 0));
    if (*size == -1 && PyErr_Occurred())
        return -1;
    if (tags != NULL) {
        *tags = PyLong_AsLongLong(PyTuple_GET_ITEM(m, 1));
        if (*tags == -1 && PyErr_Occurred())
            return -1;
    }
    if (props != NULL)
        *props = PyTuple_GET_ITEM(m, 2);
    return 0;
}

/* cq_units(phys, metas) -> bytes: the 20-byte consume-queue unit (phys, size, tags code) of each record. */
static PyObject *py_cq_units(PyObject *self, PyObject *args) {
    long long phys;
    PyObject *metas;
    if (!PyArg_ParseTuple(args, "LO!", &phys, &PyList_Type, &metas))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(metas);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 20);
    if (out == NULL)
        return NULL;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        long long size, tags;
        if (meta_at(metas, i, &size, &tags, NULL) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        put64(o, (uint64_t)phys);
        put32(o + 8, (uint32_t)size);
        put64(o + 12, (uint64_t)tags);
        o += 20;
        phys += size;
    }
    return out;
}

static uint32_t positive(uint32_t h) { /* Java: Math.abs((int) h); Integer.MIN_VALUE gives 0 */
    if (h & 0x80000000u)
        return h == 0x80000000u ? 0 : (uint32_t)(0x100000000ull - h);
    return h;
}

typedef struct {
    uint32_t *hash;
    int64_t *phys;
    Py_ssize_t len, cap;
} KeyList;

static int keys_add(KeyList *k, uint32_t h, int64_t phys) {
    if (k->len == k->cap) {
        Py_ssize_t cap = k->cap ? k->cap * 2 : 64;
        uint32_t *nh = PyMem_Realloc(k->hash, (size_t)cap * sizeof *nh);
        if (nh == NULL)
            return -1;
        k->hash = nh;
        int64_t *np = PyMem_Realloc(k->phys, (size_t)cap * sizeof *np);
        if (np == NULL)
            return -1;
        k->phys = np;
        k->cap = cap;
    }
    k->hash[k->len] = h;
    k->phys[k->len++] = phys;
    return 0;
}

static PyObject *uniq_name, *keys_name, *space;

/* Adds the index keys of one record (its UNIQ_KEY, then each non-empty space-separated KEYS entry),
 * hashed as "topic#key" from prefix (the hash of "topic#"), at commitlog offset phys. -1: error set. */
static int keys_of(KeyList *k, uint32_t prefix, PyObject *props, long long phys) {
    if (uniq_name == NULL && ((uniq_name = PyUnicode_InternFromString("UNIQ_KEY")) == NULL ||
                              (keys_name = PyUnicode_InternFromString("KEYS")) == NULL ||
                              (space = PyUnicode_InternFromString(" ")) == NULL))
        return -1;
    if (!PyDict_Check(props)) {
        PyErr_SetString(PyExc_TypeError, "a record's properties are a dict");
        return -1;
    }
    PyObject *uniq = PyDict_GetItemWithError(props, uniq_name);
    if (uniq == NULL && PyErr_Occurred())
        return -1;
    if (uniq != NULL && PyUnicode_Check(uniq) && PyUnicode_GET_LENGTH(uniq) > 0 &&
        keys_add(k, positive(java_hash_extend(prefix, uniq)), phys) < 0)
        goto nomem;
    PyObject *keys = PyDict_GetItemWithError(props, keys_name);
    if (keys == NULL && PyErr_Occurred())
        return -1;
    if (keys != NULL && PyUnicode_Check(keys) && PyUnicode_GET_LENGTH(keys) > 0) {
        PyObject *parts = PyUnicode_Split(keys, space, -1);
        if (parts == NULL)
            return -1;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(parts); j++) {
            PyObject *part = PyList_GET_ITEM(parts, j);
            if (PyUnicode_GET_LENGTH(part) > 0 && keys_add(k, positive(java_hash_extend(prefix, part)), phys) < 0) {
                Py_DECREF(parts);
                goto nomem;
            }
        }
        Py_DECREF(parts);
    }
    return 0;
nomem:
    PyErr_NoMemory();
    return -1;
}

/* index_keys(prefix_hash, metas, phys) -> (hashes, phys): the index keys of every record in order
 * (keys_of each), as native uint32 key hashes and native int64 commitlog offsets. */
static PyObject *py_index_keys(PyObject *self, PyObject *args) {
    unsigned long long prefix;
    long long phys;
    PyObject *metas;
    if (!PyArg_ParseTuple(args, "KO!L", &prefix, &PyList_Type, &metas, &phys))
        return NULL;
    KeyList k = {NULL, NULL, 0, 0};
    PyObject *result = NULL;
    Py_ssize_t n = PyList_GET_SIZE(metas);
    for (Py_ssize_t i = 0; i < n; i++) {
        long long size;
        PyObject *props;
        if (meta_at(metas, i, &size, NULL, &props) < 0 || keys_of(&k, (uint32_t)prefix, props, phys) < 0)
            goto done;
        phys += size;
    }
    result = Py_BuildValue("(y#y#)", (const char *)k.hash, k.len * (Py_ssize_t)sizeof(uint32_t),
                           (const char *)k.phys, k.len * (Py_ssize_t)sizeof(int64_t));
done:
    PyMem_Free(k.hash);
    PyMem_Free(k.phys);
    return result;
}

#define INDEX_HEADER 40
#define INDEX_ENTRY 20
#define INDEX_CHUNK 64

/* index_write(file, slot_num, index_num, index_count, hash_slot_count, begin_ts, begin_phy, hashes,
 *             phys, start, store_ts)
 *   -> (written, index_count, hash_slot_count, begin_ts, begin_phy, end_phy)
 * Appends the keys from ``start`` on to an index file's mapping while it has room, as
 * IndexFile.put_keys does, in chunks that each write their entries, then the header, then the slots
 * (a slot never points at an entry the header does not count). */
/* Writes hs[0:total] / ps[0:total] while the file has room; returns how many went in. */
static long long index_write_core(unsigned char *m, long long slot_num, long long index_num, long long *countp,
                                  long long *slot_countp, long long *begin_tsp, long long *begin_phyp,
                                  const uint32_t *hs, const int64_t *ps, long long total, long long store_ts,
                                  long long *end_phyp) {
    long long count = *countp, slot_count = *slot_countp, begin_ts = *begin_tsp, begin_phy = *begin_phyp;
    long long entries_at = INDEX_HEADER + slot_num * 4;
    long long room = index_num - count;
    long long n = total < room ? total : room, end_phy = 0;
    if (n <= 0)
        return 0;
    if (count == 1) {
        begin_ts = store_ts;
        begin_phy = ps[0];
    }
    long long diff = (store_ts - begin_ts) / 1000;
    if (store_ts - begin_ts < 0)
        diff = 0; /* Python's floor division of a negative difference is negative too: clamped alike */
    if (diff > 0x7FFFFFFF)
        diff = 0x7FFFFFFF;
    for (long long done = 0; done < n;) {
        long long chunk = n - done < INDEX_CHUNK ? n - done : INDEX_CHUNK;
        long long slot_pos[INDEX_CHUNK], heads[INDEX_CHUNK];
        int used = 0;
        for (long long j = 0; j < chunk; j++) {
            uint32_t h = hs[done + j];
            long long pos = INDEX_HEADER + (long long)(h % (uint64_t)slot_num) * 4, head = -1;
            int at = -1;
            for (int u = 0; u < used; u++)
                if (slot_pos[u] == pos) {
                    at = u;
                    head = heads[u];
                    break;
                }
            if (at < 0) {
                head = (int32_t)get32(m + pos);
                if (head <= 0 || head >= count) { /* empty, or left by a torn write */
                    head = 0;
                    slot_count++;
                }
                at = used++;
                slot_pos[at] = pos;
            }
            unsigned char *e = m + entries_at + count * INDEX_ENTRY;
            put32(e, h);
            put64(e + 4, (uint64_t)ps[done + j]);
            put32(e + 12, (uint32_t)diff);
            put32(e + 16, (uint32_t)head);
            heads[at] = count++;
            end_phy = ps[done + j];
        }
        put64(m, (uint64_t)begin_ts);
        put64(m + 8, (uint64_t)store_ts);
        put64(m + 16, (uint64_t)begin_phy);
        put64(m + 24, (uint64_t)end_phy);
        put32(m + 32, (uint32_t)slot_count);
        put32(m + 36, (uint32_t)count);
        for (int u = 0; u < used; u++)
            put32(m + slot_pos[u], (uint32_t)heads[u]);
        done += chunk;
    }
    *countp = count;
    *slot_countp = slot_count;
    *begin_tsp = begin_ts;
    *begin_phyp = begin_phy;
    *end_phyp = end_phy;
    return n;
}

static int index_file_ok(Py_buffer *file, long long slot_num, long long index_num, long long count) {
    if (slot_num < 1 || index_num < 2 || count < 1 || file->len < INDEX_HEADER + slot_num * 4 + index_num * INDEX_ENTRY) {
        PyErr_SetString(PyExc_ValueError, "arguments do not describe an index file");
        return 0;
    }
    return 1;
}

static PyObject *py_index_write(PyObject *self, PyObject *args) {
    Py_buffer file, hashes, physv;
    long long slot_num, index_num, count, slot_count, begin_ts, begin_phy, start, store_ts;
    if (!PyArg_ParseTuple(args, "w*LLLLLLy*y*LL", &file, &slot_num, &index_num, &count, &slot_count, &begin_ts,
                          &begin_phy, &hashes, &physv, &start, &store_ts))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t total = hashes.len / (Py_ssize_t)sizeof(uint32_t);
    if (!index_file_ok(&file, slot_num, index_num, count))
        goto done;
    if (physv.len != total * (Py_ssize_t)sizeof(int64_t) || start < 0 || start > total) {
        PyErr_SetString(PyExc_ValueError, "index_write: hashes and offsets do not match");
        goto done;
    }
    long long end_phy = 0;
    long long n = index_write_core(file.buf, slot_num, index_num, &count, &slot_count, &begin_ts, &begin_phy,
                                   (const uint32_t *)hashes.buf + start, (const int64_t *)physv.buf + start,
                                   total - start, store_ts, &end_phy);
    result = Py_BuildValue("(LLLLLL)", n, count, slot_count, begin_ts, begin_phy, end_phy);
done:
    PyBuffer_Release(&file);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&physv);
    return result;
}

/* index_one(file, slot_num, index_num, index_count, hash_slot_count, begin_ts, begin_phy, prefix_hash,
 *           properties, phys, store_ts) -> (written, index_count, hash_slot_count, begin_ts, begin_phy) | None
 * The keys of one record (as index_keys finds them) into one index file, all of them or none: None
 * when they do not all fit (the caller takes the batch path, which rolls to a new file). */
static PyObject *py_index_one(PyObject *self, PyObject *args) {
    Py_buffer file;
    long long slot_num, index_num, count, slot_count, begin_ts, begin_phy, phys, store_ts;
    unsigned long long prefix;
    PyObject *props;
    if (!PyArg_ParseTuple(args, "w*LLLLLLKO!LL", &file, &slot_num, &index_num, &count, &slot_count, &begin_ts,
                          &begin_phy, &prefix, &PyDict_Type, &props, &phys, &store_ts))
        return NULL;
    PyObject *result = NULL;
    KeyList k = {NULL, NULL, 0, 0};
    if (!index_file_ok(&file, slot_num, index_num, count) || keys_of(&k, (uint32_t)prefix, props, phys) < 0)
        goto done;
    if (k.len > index_num - count) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    long long end_phy = 0;
    long long n = index_write_core(file.buf, slot_num, index_num, &count, &slot_count, &begin_ts, &begin_phy,
                                   k.hash, k.phys, k.len, store_ts, &end_phy);
    result = Py_BuildValue("(LLLLL)", n, count, slot_count, begin_ts, begin_phy);
done:
    PyMem_Free(k.hash);
    PyMem_Free(k.phys);
    PyBuffer_Release(&file);
    return result;
}

/* -- a single send's properties --------------------------------------------------------------------- */

/* Drops the first `key` pair from buf[0:*n] as pyrocketmq.remoting.message.strip_property does. */
static void strip_pair(char *buf, Py_ssize_t *n, const char *key) {
    Py_ssize_t len = *n, klen = (Py_ssize_t)strlen(key), start = -1;
    if (len > klen && memcmp(buf, key, (size_t)klen) == 0 && buf[klen] == '\x01') {
        start = 0;
    } else {
        for (Py_ssize_t i = 0; i + klen + 1 < len; i++) {
            if (buf[i] == '\x02' && memcmp(buf + i + 1, key, (size_t)klen) == 0 && buf[i + 1 + klen] == '\x01') {
                start = i + 1;
                break;
            }
        }
    }
    if (start < 0)
        return;
    Py_ssize_t end = -1;
    for (Py_ssize_t i = start; i < len; i++) {
        if (buf[i] == '\x02') {
            end = i;
            break;
        }
    }
    if (end < 0) {
        *n = start > 0 ? start - 1 : 0;
        return;
    }
    memmove(buf + start, buf + end + 1, (size_t)(len - end - 1));
    *n = len - (end + 1 - start);
}

static int contains(const char *buf, Py_ssize_t n, const char *needle) {
    Py_ssize_t m = (Py_ssize_t)strlen(needle);
    for (Py_ssize_t i = 0; i + m <= n; i++)
        if (buf[i] == needle[0] && memcmp(buf + i, needle, (size_t)m) == 0)
            return 1;
    return 0;
}

/* send_properties(text, cluster_prop, drop_delay) -> (raw, props_bytes, properties, wait): see native.py */
static PyObject *py_send_properties(PyObject *self, PyObject *args) {
    PyObject *text;
    Py_buffer cluster;
    int drop_delay;
    if (!PyArg_ParseTuple(args, "Oy*p", &text, &cluster, &drop_delay))
        return NULL;
    const char *src = "";
    Py_ssize_t n = 0;
    PyObject *result = NULL, *raw = NULL, *stored = NULL, *props = NULL;
    char *buf = NULL;
    if (text != Py_None) {
        if (!PyUnicode_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "send_properties: text must be a str or None");
            goto done;
        }
        src = PyUnicode_AsUTF8AndSize(text, &n);
        if (src == NULL)
            goto done;
    }
    buf = PyMem_Malloc((size_t)n + 1);
    if (buf == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(buf, src, (size_t)n);
    int wait = !contains(buf, n, "WAIT\x01" "false");
    strip_pair(buf, &n, "WAIT");
    if (drop_delay)
        strip_pair(buf, &n, "DELAY");
    if (n > 0 && buf[n - 1] != '\x02')
        buf[n++] = '\x02';
    raw = PyBytes_FromStringAndSize(buf, n);
    stored = PyBytes_FromStringAndSize(NULL, n + cluster.len);
    props = PyDict_New();
    if (raw == NULL || stored == NULL || props == NULL)
        goto done;
    memcpy(PyBytes_AS_STRING(stored), buf, (size_t)n);
    memcpy(PyBytes_AS_STRING(stored) + n, cluster.buf, (size_t)cluster.len);
    Py_ssize_t s = 0;
    while (s < n) {
        Py_ssize_t e = s, sep = -1;
        while (e < n && buf[e] != '\x02') {
            if (sep < 0 && buf[e] == '\x01')
                sep = e;
            e++;
        }
        if (sep > s && e > sep + 1) {
            PyObject *k = PyUnicode_DecodeUTF8(buf + s, sep - s, "replace");
            PyObject *v = k == NULL ? NULL : PyUnicode_DecodeUTF8(buf + sep + 1, e - sep - 1, "replace");
            int rc = v == NULL ? -1 : PyDict_SetItem(props, k, v);
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (rc < 0)
                goto done;
        }
        s = e + 1;
    }
    result = Py_BuildValue("(OOON)", raw, stored, props, PyBool_FromLong(wait));
done:
    Py_XDECREF(raw);
    Py_XDECREF(stored);
    Py_XDECREF(props);
    PyMem_Free(buf);
    PyBuffer_Release(&cluster);
    return result;
}

static PyMethodDef methods[] = {
    {"encode_batch", py_encode_batch, METH_VARARGS,
     "encode_batch(batch, sys_flag, store_ts, max_body, magic) -> (bytearray of records, "
     "[(size, tags_code, properties)])"},
    {"encode_record", py_encode_record, METH_VARARGS,
     "encode_record(msg, topic, properties, sys_flag, born_host, store_host, store_ts, magic) -> bytearray: "
     "one record, offsets zero"},
    {"patch_offsets", py_patch_offsets, METH_VARARGS,
     "patch_offsets(records, queue_offset, phys_offset): number the consecutive records in place"},
    {"offset_msg_ids", py_offset_msg_ids, METH_VARARGS,
     "offset_msg_ids(store_host, phys_offset, sizes) -> comma-joined offset message ids"},
    {"put_record", py_put_record, METH_VARARGS,
     "put_record(segment, position, segment_offset, units, unit_position, msg, queue_offset, store_ts, magic, "
     "max_size) -> (size, offset message id), or None when it is not a plain put (nothing written)"},
    {"cq_units", py_cq_units, METH_VARARGS, "cq_units(phys, metas) -> the consume-queue units of a batch's records"},
    {"index_keys", py_index_keys, METH_VARARGS,
     "index_keys(prefix_hash, metas, phys) -> (uint32 key hashes, int64 offsets) of a batch's index keys"},
    {"index_write", py_index_write, METH_VARARGS,
     "index_write(file, slot_num, index_num, index_count, hash_slot_count, begin_ts, begin_phy, hashes, phys, "
     "start, store_ts) -> (written, index_count, hash_slot_count, begin_ts, begin_phy, end_phy)"},
    {"send_properties", py_send_properties, METH_VARARGS,
     "send_properties(text, cluster_prop, drop_delay) -> (raw, props_bytes, properties, wait) of a single send"},
    {"index_one", py_index_one, METH_VARARGS,
     "index_one(file, slot_num, index_num, index_count, hash_slot_count, begin_ts, begin_phy, prefix_hash, properties, "
     "phys, store_ts) -> (written, index_count, hash_slot_count, begin_ts, begin_phy), or None when they do not all fit"},
    {"java_hash", py_java_hash, METH_VARARGS,
     "java_hash(s, start=0) -> Java hashCode of (a string hashing to start) + s, unsigned 32-bit"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", "The store's compiled batch path.", -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    crc_init();
    if (names_init() < 0)
        return NULL;
    return PyModule_Create(&module);
}
