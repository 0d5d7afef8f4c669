/* trisque.shell._fdio: os.read and os.write for the event loop's
 * non-blocking sockets, without releasing the GIL around the call.
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
#include <unistd.h>

#define BUFFER_SIZE (64 * 1024)

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
        for (;;) {
            got = read(fd, buffer, (size_t)n);
            if (got >= 0)
                return PyBytes_FromStringAndSize(buffer, got);
            if (errno != EINTR)
                return PyErr_SetFromErrno(PyExc_OSError);
            if (PyErr_CheckSignals() < 0)
                return NULL;
        }
    }
    /* (more than the buffer: os.read's way, the room shrunk to what came) */
    data = PyBytes_FromStringAndSize(NULL, n);
    if (data == NULL)
        return NULL;
    for (;;) {
        got = read(fd, PyBytes_AS_STRING(data), (size_t)n);
        if (got >= 0)
            break;
        if (errno != EINTR) {
            Py_DECREF(data);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        if (PyErr_CheckSignals() < 0) {
            Py_DECREF(data);
            return NULL;
        }
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
        for (;;) {
            sent = write(fd, PyBytes_AS_STRING(args[1]), (size_t)PyBytes_GET_SIZE(args[1]));
            if (sent >= 0)
                return PyLong_FromSsize_t(sent);
            if (errno != EINTR)
                return PyErr_SetFromErrno(PyExc_OSError);
            if (PyErr_CheckSignals() < 0)
                return NULL;
        }
    }
    if (PyObject_GetBuffer(args[1], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    for (;;) {
        sent = write(fd, view.buf, (size_t)view.len);
        if (sent >= 0)
            break;
        if (errno != EINTR) {
            PyErr_SetFromErrno(PyExc_OSError);
            PyBuffer_Release(&view);
            return NULL;
        }
        if (PyErr_CheckSignals() < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(sent);
}

static PyMethodDef fdio_methods[] = {
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
