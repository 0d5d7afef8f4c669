/* trisque.shell._fdio: os.read and os.write for the event loop's
 * non-blocking sockets, without releasing the GIL around the call, and
 * its epoll set's poll (below, fdio_poll).
 *
 * os.read and os.write release and take the GIL around every system call
 * (~400 instructions a call, ~13 calls a replicated job on its origin),
 * and os.read allocates room for n bytes and shrinks it to what came.
 * A call on a non-blocking descriptor never waits, so the GIL is kept;
 * a read lands in a static buffer (the GIL held throughout: nobody else
 * uses it meanwhile) and becomes bytes of just its size.  Only for
 * descriptors in non-blocking mode: on a blocking one the whole process
 * would wait.  Errors are os.read's and os.write's (BlockingIOError for
 * EAGAIN; EINTR retried after the signal handlers ran).  fdio.py falls
 * back on os.read and os.write without this module.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define BUFFER_SIZE (64 * 1024)
#define MAX_EVENTS 64  /* poll's maxevents at most (socket_set.py asks 32) */

static char buffer[BUFFER_SIZE];

static int
fd_of(PyObject *arg, int *fd)
{
    long value = PyLong_AsLong(arg);
    if (value == -1 && PyErr_Occurred())
        return -1;
    if (value < INT_MIN || value > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "file descriptor out of range");
        return -1;
    }
    *fd = (int)value;
    return 0;
}

/* read(2) or, ``writing``, write(2) of n bytes at buf, retried after
 * EINTR once the signal handlers ran: the bytes moved, or -1 with the
 * Python exception set (os.read's and os.write's errors). */
static Py_ssize_t
transfer(int fd, char *buf, size_t n, int writing)
{
    Py_ssize_t moved;

    for (;;) {
        moved = writing ? write(fd, buf, n) : read(fd, buf, n);
        if (moved >= 0)
            return moved;
        if (errno != EINTR) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        if (PyErr_CheckSignals() < 0)
            return -1;
    }
}

static PyObject *
fdio_read(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    int fd;
    Py_ssize_t n, got;
    PyObject *data;

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "read(fd, n) takes 2 arguments");
        return NULL;
    }
    if (fd_of(args[0], &fd) < 0)
        return NULL;
    n = PyLong_AsSsize_t(args[1]);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "negative length");
        return NULL;
    }
    if (n <= BUFFER_SIZE) {
        got = transfer(fd, buffer, (size_t)n, 0);
        return got < 0 ? NULL : PyBytes_FromStringAndSize(buffer, got);
    }
    /* (more than the buffer: os.read's way, the room shrunk to what came) */
    data = PyBytes_FromStringAndSize(NULL, n);
    if (data == NULL)
        return NULL;
    got = transfer(fd, PyBytes_AS_STRING(data), (size_t)n, 0);
    if (got < 0) {
        Py_DECREF(data);
        return NULL;
    }
    if (got != n && _PyBytes_Resize(&data, got) < 0)
        return NULL;
    return data;
}

static PyObject *
fdio_write(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    int fd;
    Py_buffer view;
    Py_ssize_t sent;

    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "write(fd, data) takes 2 arguments");
        return NULL;
    }
    if (fd_of(args[0], &fd) < 0)
        return NULL;
    if (PyBytes_CheckExact(args[1])) {
        sent = transfer(fd, PyBytes_AS_STRING(args[1]), (size_t)PyBytes_GET_SIZE(args[1]), 1);
        return sent < 0 ? NULL : PyLong_FromSsize_t(sent);
    }
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    sent = transfer(fd, (char *)view.buf, (size_t)view.len, 1);
    PyBuffer_Release(&view);
    if (sent < 0)
        return NULL;
    return PyLong_FromSsize_t(sent);
}

/* poll(epfd, timeout, maxevents): select.epoll's poll of the set whose fd
 * is epfd, the same (fd, events) pairs: timeout in seconds (an int or a
 * float, rounded up to epoll's milliseconds, as epoll.poll does: the
 * wait ends no earlier), negative to wait until an event.  The GIL is
 * released only for a wait (epoll.poll released it each call, ~400
 * instructions: a timeout of 0 returns at once), and the pairs are made
 * directly, where epoll.poll built each by Py_BuildValue (~350 a pair). */
static PyObject *
fdio_poll(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    struct epoll_event events[MAX_EVENTS];
    int epfd, maxevents, got, i, ms = -1;
    double timeout;
    struct timespec now;
    long long deadline_ns = 0;
    PyObject *ready, *pair, *fd, *mask;

    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "poll(epfd, timeout, maxevents) takes 3 arguments");
        return NULL;
    }
    if (fd_of(args[0], &epfd) < 0)
        return NULL;
    timeout = PyFloat_AsDouble(args[1]);
    if (timeout == -1.0 && PyErr_Occurred())
        return NULL;
    maxevents = (int)PyLong_AsLong(args[2]);
    if (maxevents == -1 && PyErr_Occurred())
        return NULL;
    if (maxevents <= 0 || maxevents > MAX_EVENTS) {
        PyErr_SetString(PyExc_ValueError, "maxevents out of range");
        return NULL;
    }
    if (timeout >= 0) {
        /* (as epoll.poll: up to nanoseconds, then to milliseconds, each
         * rounded up) */
        double ns = ceil(timeout * 1e9);
        if (ns > (double)INT_MAX * 1e6) {
            PyErr_SetString(PyExc_OverflowError, "timeout too large");
            return NULL;
        }
        ms = (int)(((long long)ns + 999999) / 1000000);
        if (ms > 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            deadline_ns = (long long)now.tv_sec * 1000000000 + now.tv_nsec + (long long)ns;
        }
    }
    for (;;) {
        /* (a first look without the wait, the GIL kept, would cost every
         * sleep a second system call: bench/README.md) */
        if (ms == 0) {
            got = epoll_wait(epfd, events, maxevents, 0);
        } else {
            Py_BEGIN_ALLOW_THREADS
            got = epoll_wait(epfd, events, maxevents, ms);
            Py_END_ALLOW_THREADS
        }
        if (got >= 0)
            break;
        if (errno != EINTR)
            return PyErr_SetFromErrno(PyExc_OSError);
        if (PyErr_CheckSignals() < 0)
            return NULL;
        if (ms > 0) {  /* (what is left of the wait, as epoll.poll does) */
            long long left;
            clock_gettime(CLOCK_MONOTONIC, &now);
            left = deadline_ns - ((long long)now.tv_sec * 1000000000 + now.tv_nsec);
            ms = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
        }
    }
    ready = PyList_New(got);
    if (ready == NULL)
        return NULL;
    for (i = 0; i < got; i++) {
        fd = PyLong_FromLong(events[i].data.fd);
        mask = PyLong_FromUnsignedLong(events[i].events);
        pair = PyTuple_New(2);
        if (fd == NULL || mask == NULL || pair == NULL) {
            Py_XDECREF(fd);
            Py_XDECREF(mask);
            Py_XDECREF(pair);
            Py_DECREF(ready);
            return NULL;
        }
        PyTuple_SET_ITEM(pair, 0, fd);
        PyTuple_SET_ITEM(pair, 1, mask);
        PyList_SET_ITEM(ready, i, pair);
    }
    return ready;
}

static PyMethodDef fdio_methods[] = {
    {"poll", (PyCFunction)(void (*)(void))fdio_poll, METH_FASTCALL,
     "poll(epfd, timeout, maxevents): epoll.poll of the set epfd, the GIL kept without a wait"},
    {"read", (PyCFunction)(void (*)(void))fdio_read, METH_FASTCALL,
     "read(fd, n): os.read(fd, n) of a non-blocking fd, the GIL kept"},
    {"write", (PyCFunction)(void (*)(void))fdio_write, METH_FASTCALL,
     "write(fd, data): os.write(fd, data) of a non-blocking fd, the GIL kept"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fdio_module = {
    PyModuleDef_HEAD_INIT, "_fdio", NULL, -1, fdio_methods,
};

PyMODINIT_FUNC
PyInit__fdio(void)
{
    return PyModule_Create(&fdio_module);
}
