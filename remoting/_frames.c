/*
 * A remoting frame with a JSON header, decoded in one call: the header's fields, its extFields and
 * the body, into a RemotingCommand. And the SEND_MESSAGE_V2 header of a send (its one-letter
 * extFields) into a SendMessageRequestHeader, when every field has the plain form. And the other way:
 * a command's length fields and JSON header, byte for byte what the Python encoder (orjson) writes,
 * for a command whose strings need no escaping (else None, and Python encodes it).
 *
 * It reads the form every peer writes (a flat object: the four integer fields, the language, the
 * remark, extFields of strings; strings with JSON escapes and UTF-8), and nothing else: for any
 * other form -- a binary header, a malformed or unusual document, a duplicate field, a number where
 * a string is expected, a string Python's path would read differently -- it returns None, and
 * pyrocketmq.remoting.command decodes the frame in Python, which also says what is wrong with a bad
 * one. So what this returns is always what the Python path returns for the same bytes (the tests
 * hold it to that over generated and mutated headers).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static PyObject *command_type;   /* RemotingCommand */
static PyObject *lang_by_name;   /* {"JAVA": LanguageCode.JAVA, ...} */
static PyObject *lang_other;     /* LanguageCode.OTHER */
static PyObject *lang_default;   /* the language of a header without one: LanguageCode.JAVA */

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
    unsigned char *scratch;      /* unescaped string bytes */
    Py_ssize_t scratch_len;
} Reader;

/* 1: parsed; 0: not the plain form (the caller returns None); -1: a Python error is set. */
#define PLAIN 1
#define OTHER 0
#define ERROR (-1)

static inline void skip_ws(Reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

static int hex4(const unsigned char *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

static unsigned char *ensure_scratch(Reader *r, Py_ssize_t n) {
    if (r->scratch_len < n) {
        unsigned char *grown = PyMem_Realloc(r->scratch, (size_t)n);
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        r->scratch = grown;
        r->scratch_len = n;
    }
    return r->scratch;
}

/* A JSON string at r->p (the opening quote), as a str in *out (NULL to only check it).
 * OTHER for anything orjson would refuse or read differently: control characters, bad escapes,
 * lone surrogates, invalid UTF-8. */
static int read_string(Reader *r, PyObject **out) {
    const unsigned char *s = r->p + 1;
    const unsigned char *q = s;
    int escaped = 0, ascii = 1;
    while (q < r->end && *q != '"') {
        unsigned char c = *q;
        if (c < 0x20)
            return OTHER;
        if (c == '\\') {
            escaped = 1;
            if (q + 1 >= r->end)
                return OTHER;
            q += 2;
            continue;
        }
        if (c >= 0x80)
            ascii = 0;
        q++;
    }
    if (q >= r->end)
        return OTHER;
    r->p = q + 1;
    const char *bytes = (const char *)s;
    Py_ssize_t n = q - s;
    if (escaped) {
        unsigned char *w = ensure_scratch(r, n);
        if (w == NULL)
            return ERROR;
        unsigned char *o = w;
        const unsigned char *i = s;
        while (i < q) {
            if (*i != '\\') {
                *o++ = *i++;
                continue;
            }
            unsigned char e = i[1];
            i += 2;
            switch (e) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '/': *o++ = '/'; break;
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'n': *o++ = '\n'; break;
            case 'r': *o++ = '\r'; break;
            case 't': *o++ = '\t'; break;
            case 'u': {
                uint32_t cp;
                if (q - i < 4 || !hex4(i, &cp))
                    return OTHER;
                i += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    uint32_t lo;
                    if (q - i < 6 || i[0] != '\\' || i[1] != 'u' || !hex4(i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return OTHER;
                    i += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return OTHER;
                }
                /* UTF-8 of cp: never longer than the 6 or 12 escape bytes it replaces */
                if (cp < 0x80) {
                    *o++ = (unsigned char)cp;
                } else if (cp < 0x800) {
                    *o++ = (unsigned char)(0xC0 | (cp >> 6));
                    *o++ = (unsigned char)(0x80 | (cp & 0x3F));
                } else if (cp < 0x10000) {
                    *o++ = (unsigned char)(0xE0 | (cp >> 12));
                    *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                    *o++ = (unsigned char)(0x80 | (cp & 0x3F));
                } else {
                    *o++ = (unsigned char)(0xF0 | (cp >> 18));
                    *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                    *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                    *o++ = (unsigned char)(0x80 | (cp & 0x3F));
                }
                ascii = 0;
                break;
            }
            default:
                return OTHER;
            }
        }
        bytes = (const char *)w;
        n = o - w;
    }
    if (out == NULL && ascii)
        return PLAIN;
    PyObject *str = ascii ? PyUnicode_DecodeASCII(bytes, n, NULL) : PyUnicode_DecodeUTF8(bytes, n, NULL);
    if (str == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            return ERROR;
        PyErr_Clear();
        return OTHER;
    }
    if (out == NULL)
        Py_DECREF(str);
    else
        *out = str;
    return PLAIN;
}

/* A JSON integer (no fraction, no exponent) in Java's int range. */
static int read_int32(Reader *r, long *out) {
    const unsigned char *p = r->p;
    int neg = 0;
    if (p < r->end && *p == '-') {
        neg = 1;
        p++;
    }
    if (p >= r->end || *p < '0' || *p > '9')
        return OTHER;
    long long v = 0;
    if (*p == '0') {
        p++;
    } else {
        int digits = 0;
        while (p < r->end && *p >= '0' && *p <= '9') {
            if (++digits > 10)
                return OTHER;
            v = v * 10 + (*p - '0');
            p++;
        }
    }
    if (p < r->end && (*p == '.' || *p == 'e' || *p == 'E'))
        return OTHER;
    if (neg)
        v = -v;
    if (v < INT32_MIN || v > INT32_MAX)
        return OTHER;
    r->p = p;
    *out = (long)v;
    return PLAIN;
}

static int read_literal(Reader *r, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return OTHER;
    r->p += n;
    return PLAIN;
}

/* Skips a value the command does not keep: a string, an int, true, false or null. */
static int skip_value(Reader *r) {
    if (r->p >= r->end)
        return OTHER;
    switch (*r->p) {
    case '"': return read_string(r, NULL);
    case 't': return read_literal(r, "true");
    case 'f': return read_literal(r, "false");
    case 'n': return read_literal(r, "null");
    default: {
        long ignored;
        return read_int32(r, &ignored);
    }
    }
}

/* extFields: an object of string values, no key twice, into the dict `ext`. */
static int read_ext(Reader *r, PyObject *ext) {
    r->p++; /* { */
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return PLAIN;
    }
    for (;;) {
        if (r->p >= r->end || *r->p != '"')
            return OTHER;
        PyObject *key = NULL, *value = NULL;
        int rc = read_string(r, &key);
        if (rc != PLAIN)
            return rc;
        skip_ws(r);
        if (r->p >= r->end || *r->p != ':') {
            Py_DECREF(key);
            return OTHER;
        }
        r->p++;
        skip_ws(r);
        if (r->p >= r->end || *r->p != '"') {
            Py_DECREF(key);
            return OTHER;
        }
        rc = read_string(r, &value);
        if (rc != PLAIN) {
            Py_DECREF(key);
            return rc;
        }
        Py_ssize_t before = PyDict_GET_SIZE(ext);
        rc = PyDict_SetItem(ext, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (rc < 0)
            return ERROR;
        if (PyDict_GET_SIZE(ext) == before)
            return OTHER; /* a key twice */
        skip_ws(r);
        if (r->p >= r->end)
            return OTHER;
        if (*r->p == '}') {
            r->p++;
            return PLAIN;
        }
        if (*r->p != ',')
            return OTHER;
        r->p++;
        skip_ws(r);
    }
}

enum { F_CODE = 1, F_OPAQUE = 2, F_FLAG = 4, F_VERSION = 8, F_LANGUAGE = 16, F_REMARK = 32, F_EXT = 64 };

typedef struct {
    long code, opaque, flag, version;
    PyObject *language; /* new reference or NULL */
    PyObject *remark;   /* new reference or NULL (None) */
    PyObject *ext;      /* new reference */
    int seen;
} Header;

static int key_is(const unsigned char *k, Py_ssize_t n, const char *name) {
    return (size_t)n == strlen(name) && memcmp(k, name, (size_t)n) == 0;
}

static int read_header(Reader *r, Header *h) {
    skip_ws(r);
    if (r->p >= r->end || *r->p != '{')
        return OTHER;
    r->p++;
    skip_ws(r);
    if (r->p < r->end && *r->p == '}')
        return OTHER; /* no code */
    for (;;) {
        if (r->p >= r->end || *r->p != '"')
            return OTHER;
        /* a field name of the header: plain ASCII, no escapes */
        const unsigned char *k = r->p + 1, *q = k;
        while (q < r->end && *q != '"' && *q != '\\' && *q >= 0x20 && *q < 0x80)
            q++;
        if (q >= r->end || *q != '"')
            return OTHER;
        Py_ssize_t kn = q - k;
        r->p = q + 1;
        skip_ws(r);
        if (r->p >= r->end || *r->p != ':')
            return OTHER;
        r->p++;
        skip_ws(r);
        if (r->p >= r->end)
            return OTHER;
        int field = 0;
        long *int_field = NULL;
        if (key_is(k, kn, "code")) { field = F_CODE; int_field = &h->code; }
        else if (key_is(k, kn, "opaque")) { field = F_OPAQUE; int_field = &h->opaque; }
        else if (key_is(k, kn, "flag")) { field = F_FLAG; int_field = &h->flag; }
        else if (key_is(k, kn, "version")) { field = F_VERSION; int_field = &h->version; }
        else if (key_is(k, kn, "language")) field = F_LANGUAGE;
        else if (key_is(k, kn, "remark")) field = F_REMARK;
        else if (key_is(k, kn, "extFields")) field = F_EXT;
        if (field & h->seen)
            return OTHER; /* a field twice */
        h->seen |= field;
        int rc;
        if (int_field != NULL) {
            rc = read_int32(r, int_field);
        } else if (field == F_LANGUAGE) {
            if (*r->p == '"') {
                PyObject *name = NULL;
                rc = read_string(r, &name);
                if (rc == PLAIN) {
                    PyObject *code = PyDict_GetItemWithError(lang_by_name, name);
                    Py_DECREF(name);
                    if (code == NULL && PyErr_Occurred())
                        return ERROR;
                    h->language = Py_NewRef(code != NULL ? code : lang_other);
                }
            } else {
                long v;
                rc = read_int32(r, &v);
                if (rc == PLAIN) {
                    if (v < 0 || v > 255)
                        return OTHER;
                    h->language = PyLong_FromLong(v);
                    if (h->language == NULL)
                        return ERROR;
                }
            }
        } else if (field == F_REMARK) {
            if (*r->p == '"')
                rc = read_string(r, &h->remark);
            else
                rc = read_literal(r, "null");
        } else if (field == F_EXT) {
            if (*r->p == '{')
                rc = read_ext(r, h->ext);
            else
                rc = read_literal(r, "null");
        } else {
            rc = skip_value(r);
        }
        if (rc != PLAIN)
            return rc;
        skip_ws(r);
        if (r->p >= r->end)
            return OTHER;
        if (*r->p == '}') {
            r->p++;
            break;
        }
        if (*r->p != ',')
            return OTHER;
        r->p++;
        skip_ws(r);
    }
    skip_ws(r);
    if (r->p != r->end || !(h->seen & F_CODE))
        return OTHER;
    return PLAIN;
}

static PyObject *decode_json_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode_json_frame(buffer, start, end)");
        return NULL;
    }
    if (command_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_frames.configure() was not called");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    if ((start == -1 || end == -1) && PyErr_Occurred())
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = NULL;
    Header h = {0, 0, 0, 0, NULL, NULL, NULL, 0};
    Reader r = {NULL, NULL, NULL, 0};
    if (start < 0 || end > view.len || end - start < 4) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const unsigned char *frame = (const unsigned char *)view.buf + start;
    Py_ssize_t n = end - start;
    uint32_t word = (uint32_t)frame[0] << 24 | (uint32_t)frame[1] << 16 | (uint32_t)frame[2] << 8 | frame[3];
    Py_ssize_t hlen = (Py_ssize_t)(word & 0xFFFFFF);
    if ((word >> 24) != 0 || hlen > n - 4) { /* not JSON, or a header past the frame: Python's path says */
        result = Py_NewRef(Py_None);
        goto done;
    }
    h.ext = PyDict_New();
    if (h.ext == NULL)
        goto done;
    r.p = frame + 4;
    r.end = frame + 4 + hlen;
    int rc = read_header(&r, &h);
    if (rc == ERROR)
        goto done;
    if (rc == OTHER) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *body;
    if (n > 4 + hlen) {
        body = PyBytes_FromStringAndSize((const char *)frame + 4 + hlen, n - 4 - hlen);
        if (body == NULL)
            goto done;
    } else {
        body = Py_NewRef(Py_None);
    }
    PyObject *code = PyLong_FromLong(h.code), *opaque = PyLong_FromLong(h.opaque);
    PyObject *flag = PyLong_FromLong(h.flag), *version = PyLong_FromLong(h.version);
    if (code != NULL && opaque != NULL && flag != NULL && version != NULL) {
        /* RemotingCommand(code, opaque, flag, remark, ext_fields, body, language, version) */
        PyObject *call[8] = {code, opaque, flag, h.remark != NULL ? h.remark : Py_None, h.ext, body,
                             h.language != NULL ? h.language : lang_default, version};
        result = PyObject_Vectorcall(command_type, call, 8, NULL);
    }
    Py_XDECREF(code);
    Py_XDECREF(opaque);
    Py_XDECREF(flag);
    Py_XDECREF(version);
    Py_DECREF(body);
done:
    Py_XDECREF(h.language);
    Py_XDECREF(h.remark);
    Py_XDECREF(h.ext);
    PyMem_Free(r.scratch);
    PyBuffer_Release(&view);
    return result;
}

/* -- SEND_MESSAGE_V2's header ---------------------------------------------------------------------- */

static PyObject *send_header_type; /* SendMessageRequestHeader */
static PyObject *v2_key[13];       /* "a" .. "m" */

/* A str of ASCII digits with an optional minus, at most 18 digits, within [lo, hi]. */
static int plain_int(PyObject *s, long long lo, long long hi, long long *out) {
    if (!PyUnicode_Check(s) || !PyUnicode_IS_ASCII(s))
        return OTHER;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const char *p = (const char *)PyUnicode_DATA(s);
    int neg = n > 0 && p[0] == '-';
    if (n - neg < 1 || n - neg > 18)
        return OTHER;
    long long v = 0;
    for (Py_ssize_t i = neg; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return OTHER;
        v = v * 10 + (p[i] - '0');
    }
    if (neg)
        v = -v;
    if (v < lo || v > hi)
        return OTHER;
    *out = v;
    return PLAIN;
}

static PyObject *v2_get(PyObject *ext, int letter) {
    return PyDict_GetItemWithError(ext, v2_key[letter - 'a']); /* borrowed; NULL: absent or error */
}

/* An int field that must be there: a new int, or NULL with *rc OTHER (not plain) or ERROR. */
static PyObject *v2_int(PyObject *ext, int letter, long long lo, long long hi, int *rc) {
    PyObject *s = v2_get(ext, letter);
    long long v;
    if (s == NULL) {
        *rc = PyErr_Occurred() ? ERROR : OTHER;
        return NULL;
    }
    if (plain_int(s, lo, hi, &v) != PLAIN) {
        *rc = OTHER;
        return NULL;
    }
    PyObject *o = PyLong_FromLongLong(v);
    if (o == NULL)
        *rc = ERROR;
    return o;
}

/* An optional int field: None when absent, "" or "null". */
static PyObject *v2_opt_int(PyObject *ext, int letter, int *rc) {
    PyObject *s = v2_get(ext, letter);
    if (s == NULL) {
        if (PyErr_Occurred()) {
            *rc = ERROR;
            return NULL;
        }
        return Py_NewRef(Py_None);
    }
    if (PyUnicode_Check(s) && (PyUnicode_GET_LENGTH(s) == 0 || PyUnicode_CompareWithASCIIString(s, "null") == 0))
        return Py_NewRef(Py_None);
    return v2_int(ext, letter, INT32_MIN, INT32_MAX, rc);
}

/* A flag field: False when absent; "true" / "false" as they are (other spellings: OTHER). */
static PyObject *v2_bool(PyObject *ext, int letter, int *rc) {
    PyObject *s = v2_get(ext, letter);
    if (s == NULL) {
        if (PyErr_Occurred()) {
            *rc = ERROR;
            return NULL;
        }
        return Py_NewRef(Py_False);
    }
    if (PyUnicode_Check(s)) {
        if (PyUnicode_CompareWithASCIIString(s, "true") == 0)
            return Py_NewRef(Py_True);
        if (PyUnicode_CompareWithASCIIString(s, "false") == 0)
            return Py_NewRef(Py_False);
    }
    *rc = OTHER;
    return NULL;
}

static PyObject *v2_str(PyObject *ext, int letter, int required, int *rc) {
    PyObject *s = v2_get(ext, letter);
    if (s == NULL) {
        if (PyErr_Occurred())
            *rc = ERROR;
        else if (required)
            *rc = OTHER;
        else
            return Py_NewRef(Py_None);
        return NULL;
    }
    if (!PyUnicode_CheckExact(s)) {
        *rc = OTHER;
        return NULL;
    }
    return Py_NewRef(s);
}

/* send_v2_header(ext) -> SendMessageRequestHeader | None */
static PyObject *send_v2_header(PyObject *self, PyObject *ext) {
    if (send_header_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_frames.configure_send_header() was not called");
        return NULL;
    }
    if (!PyDict_CheckExact(ext))
        Py_RETURN_NONE;
    int rc = PLAIN;
    /* SendMessageRequestHeader(a, b, c, d, e, f, g, h, i, j, k, m, l): the dataclass's field order */
    PyObject *f[13] = {NULL};
    f[0] = v2_str(ext, 'a', 1, &rc);
    if (f[0]) f[1] = v2_str(ext, 'b', 1, &rc);
    if (f[1]) f[2] = v2_str(ext, 'c', 1, &rc);
    if (f[2]) f[3] = v2_int(ext, 'd', INT32_MIN, INT32_MAX, &rc);
    if (f[3]) f[4] = v2_int(ext, 'e', INT32_MIN, INT32_MAX, &rc);
    if (f[4]) f[5] = v2_int(ext, 'f', INT32_MIN, INT32_MAX, &rc);
    if (f[5]) f[6] = v2_int(ext, 'g', INT64_MIN, INT64_MAX, &rc);
    if (f[6]) f[7] = v2_int(ext, 'h', INT32_MIN, INT32_MAX, &rc);
    if (f[7]) f[8] = v2_str(ext, 'i', 0, &rc);
    if (f[8]) f[9] = v2_opt_int(ext, 'j', &rc);
    if (f[9]) f[10] = v2_bool(ext, 'k', &rc);
    if (f[10]) f[11] = v2_bool(ext, 'm', &rc);
    if (f[11]) f[12] = v2_opt_int(ext, 'l', &rc);
    PyObject *result = NULL;
    if (f[12] != NULL)
        result = PyObject_Vectorcall(send_header_type, f, 13, NULL);
    else if (rc == OTHER)
        result = Py_NewRef(Py_None);
    for (int i = 0; i < 13; i++)
        Py_XDECREF(f[i]);
    return result;
}

static PyObject *configure_send_header(PyObject *self, PyObject *cls) {
    for (int i = 0; i < 13; i++) {
        if (v2_key[i] == NULL) {
            char name[2] = {(char)('a' + i), 0};
            v2_key[i] = PyUnicode_InternFromString(name);
            if (v2_key[i] == NULL)
                return NULL;
        }
    }
    Py_XSETREF(send_header_type, Py_NewRef(cls));
    Py_RETURN_NONE;
}

/* -- encoding: length fields + JSON header ---------------------------------------------------------- */

static PyObject *lang_names; /* {LanguageCode value: name} */
static PyObject *a_code, *a_flag, *a_language, *a_opaque, *a_version, *a_remark, *a_ext, *a_body, *a_stype;

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

static int out_put(Out *o, const char *s, Py_ssize_t n) {
    if (o->len + n > o->cap) {
        Py_ssize_t cap = o->cap * 2 > o->len + n ? o->cap * 2 : o->len + n + 256;
        char *grown = PyMem_Realloc(o->buf, (size_t)cap);
        if (grown == NULL) {
            PyErr_NoMemory();
            return ERROR;
        }
        o->buf = grown;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, s, (size_t)n);
    o->len += n;
    return PLAIN;
}

static int out_lit(Out *o, const char *s) { return out_put(o, s, (Py_ssize_t)strlen(s)); }

/* An int (not a bool) in 64 bits, written as orjson writes it. */
static int out_int(Out *o, PyObject *v) {
    if (v == NULL || !PyLong_Check(v) || PyBool_Check(v))
        return OTHER;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow)
        return OTHER;
    if (x == -1 && PyErr_Occurred())
        return ERROR;
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", x);
    return out_put(o, tmp, n);
}

/* A str written between quotes as it is: OTHER when it needs escaping (or is not UTF-8 encodable). */
static int out_str(Out *o, PyObject *v) {
    if (!PyUnicode_Check(v))
        return OTHER;
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(v, &n);
    if (s == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return ERROR;
        PyErr_Clear();
        return OTHER;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '"' || c == '\\')
            return OTHER;
    }
    if (out_put(o, "\"", 1) < 0 || out_put(o, s, n) < 0 || out_put(o, "\"", 1) < 0)
        return ERROR;
    return PLAIN;
}

static int write_header(Out *o, PyObject *cmd, Py_ssize_t *body_len) {
    PyObject *v[9] = {NULL};
    PyObject *names[9] = {a_code, a_flag, a_language, a_opaque, a_version, a_remark, a_ext, a_body, a_stype};
    int rc = PLAIN;
    for (int i = 0; i < 9; i++) {
        v[i] = PyObject_GetAttr(cmd, names[i]);
        if (v[i] == NULL) {
            rc = ERROR;
            goto done;
        }
    }
    PyObject *code = v[0], *flag = v[1], *language = v[2], *opaque = v[3], *version = v[4], *remark = v[5],
             *ext = v[6], *body = v[7], *stype = v[8];
    int overflow = 0;
    if (!PyLong_Check(stype) || PyLong_AsLongAndOverflow(stype, &overflow) != 0 || overflow ||
        !PyDict_CheckExact(ext)) { /* the binary form, or something Python's encoder refuses in its own words */
        rc = OTHER;
        goto done;
    }
    /* the body's length: none, one buffer, or a list of buffers */
    Py_ssize_t blen = 0;
    if (body == Py_None) {
        blen = 0;
    } else if (PyList_CheckExact(body)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(body); i++) {
            Py_ssize_t n = PyObject_Length(PyList_GET_ITEM(body, i));
            if (n < 0) {
                rc = ERROR;
                goto done;
            }
            blen += n;
        }
    } else {
        blen = PyObject_Length(body);
        if (blen < 0) {
            rc = ERROR;
            goto done;
        }
    }
    *body_len = blen;
    PyObject *lang = PyDict_GetItemWithError(lang_names, language);
    if (lang == NULL && PyErr_Occurred()) {
        rc = ERROR;
        goto done;
    }
    if ((rc = out_lit(o, "{\"code\":")) != PLAIN || (rc = out_int(o, code)) != PLAIN ||
        (rc = out_lit(o, ",\"flag\":")) != PLAIN || (rc = out_int(o, flag)) != PLAIN ||
        (rc = out_lit(o, ",\"language\":")) != PLAIN)
        goto done;
    if (lang != NULL)
        rc = out_str(o, lang);
    else
        rc = out_lit(o, "\"OTHER\"");
    if (rc != PLAIN || (rc = out_lit(o, ",\"opaque\":")) != PLAIN || (rc = out_int(o, opaque)) != PLAIN ||
        (rc = out_lit(o, ",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":")) != PLAIN ||
        (rc = out_int(o, version)) != PLAIN)
        goto done;
    if (remark != Py_None && ((rc = out_lit(o, ",\"remark\":")) != PLAIN || (rc = out_str(o, remark)) != PLAIN))
        goto done;
    if (PyDict_GET_SIZE(ext) > 0) {
        if ((rc = out_lit(o, ",\"extFields\":{")) != PLAIN)
            goto done;
        Py_ssize_t pos = 0, i = 0;
        PyObject *k, *val;
        while (PyDict_Next(ext, &pos, &k, &val)) {
            if ((i++ && (rc = out_lit(o, ",")) != PLAIN) || (rc = out_str(o, k)) != PLAIN ||
                (rc = out_lit(o, ":")) != PLAIN || (rc = out_str(o, val)) != PLAIN)
                goto done;
        }
        if ((rc = out_lit(o, "}")) != PLAIN)
            goto done;
    }
    rc = out_lit(o, "}");
done:
    for (int i = 0; i < 9; i++)
        Py_XDECREF(v[i]);
    return rc;
}

/* encode_json_prefix(cmd) -> bytes | None */
static PyObject *encode_json_prefix(PyObject *self, PyObject *cmd) {
    if (lang_names == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_frames.configure() was not called");
        return NULL;
    }
    Out o = {NULL, 0, 0};
    PyObject *result = NULL;
    Py_ssize_t body_len = 0;
    if (out_put(&o, "\0\0\0\0\0\0\0\0", 8) < 0)
        goto done;
    int rc = write_header(&o, cmd, &body_len);
    if (rc == ERROR)
        goto done;
    Py_ssize_t hlen = o.len - 8;
    long long total = 4LL + hlen + body_len;
    if (rc == OTHER || hlen > 0xFFFFFF || total > INT32_MAX) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    unsigned char *p = (unsigned char *)o.buf;
    p[0] = (unsigned char)(total >> 24); p[1] = (unsigned char)(total >> 16); p[2] = (unsigned char)(total >> 8);
    p[3] = (unsigned char)total;
    p[4] = 0; p[5] = (unsigned char)(hlen >> 16); p[6] = (unsigned char)(hlen >> 8); p[7] = (unsigned char)hlen;
    result = PyBytes_FromStringAndSize(o.buf, o.len);
done:
    PyMem_Free(o.buf);
    return result;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *cmd, *langs, *other, *dflt, *names;
    if (!PyArg_ParseTuple(args, "OO!OOO!", &cmd, &PyDict_Type, &langs, &other, &dflt, &PyDict_Type, &names))
        return NULL;
    struct { PyObject **slot; const char *name; } attrs[] = {
        {&a_code, "code"}, {&a_flag, "flag"}, {&a_language, "language"}, {&a_opaque, "opaque"},
        {&a_version, "version"}, {&a_remark, "remark"}, {&a_ext, "ext_fields"}, {&a_body, "body"},
        {&a_stype, "serialize_type"}};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (*attrs[i].slot == NULL && (*attrs[i].slot = PyUnicode_InternFromString(attrs[i].name)) == NULL)
            return NULL;
    Py_XSETREF(lang_names, Py_NewRef(names));
    Py_XSETREF(command_type, Py_NewRef(cmd));
    Py_XSETREF(lang_by_name, Py_NewRef(langs));
    Py_XSETREF(lang_other, Py_NewRef(other));
    Py_XSETREF(lang_default, Py_NewRef(dflt));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"decode_json_frame", (PyCFunction)(void (*)(void))decode_json_frame, METH_FASTCALL,
     "decode_json_frame(buffer, start, end) -> RemotingCommand | None: the frame buffer[start:end] (after its "
     "length field) when its header is JSON in the plain form; None otherwise (decode it in Python)"},
    {"send_v2_header", send_v2_header, METH_O,
     "send_v2_header(ext_fields) -> SendMessageRequestHeader | None: a SEND_MESSAGE_V2 header when every field has "
     "the plain form; None otherwise (read it in Python)"},
    {"configure_send_header", configure_send_header, METH_O, "configure_send_header(SendMessageRequestHeader)"},
    {"encode_json_prefix", encode_json_prefix, METH_O,
     "encode_json_prefix(cmd) -> bytes | None: the length fields and JSON header of cmd as the Python encoder "
     "writes them, when no string needs escaping; None otherwise (encode it in Python)"},
    {"configure", configure, METH_VARARGS,
     "configure(command_type, language_by_name, other_language, default_language, language_names)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_frames", "Remoting frames with a JSON header, compiled.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__frames(void) { return PyModule_Create(&module); }
