/* trisque.core.keyspace._lua_call: the two crossings of a script run, in C
 * (bench/README.md, "Functions": lupa's were ~3.5k and ~4k instructions).
 *
 * - Binding.run: Python -> Lua.  Calls the script (its handle's function
 *   in the bootstrap's FN) under the bootstrap's error handler, as its
 *   Lua runner does with xpcall: KEYS/ARGV made here (a function's two
 *   arguments; a script's globals), the time-limit hook armed, and the
 *   common results converted here (a string, a number, a status "OK" as
 *   True, false as False: a missing key's GET returned); anything else the bootstrap's hold() keeps for Python to read
 *   through lupa (Sandbox.held).
 * - redis.call / redis.pcall: lua_CFunctions calling Scripting._command
 *   (the encoded reply) and turning a bulk, an integer, a status or an
 *   pcall's error into Lua values here; other replies and redis.call's
 *   errors go through lupa (a Python function of the sandbox's, called
 *   from here).
 *
 * It runs on lupa.lua51's own Lua state with lupa's own copy of Lua 5.1:
 * the functions are looked up in lupa's extension (dlsym; it exports the C
 * API) and the state comes from package.loadlib of this file's
 * trisque_lua_open (a lua_CFunction gets the lua_State).  No Lua headers:
 * the few prototypes and constants of Lua 5.1 below.  A missing symbol
 * makes the import fail, and the sandbox keeps lupa's path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stddef.h>

/* ------------------------------------------------------- Lua 5.1's API */

typedef struct lua_State lua_State;
typedef double lua_Number;
typedef int (*lua_CFunction)(lua_State *L);

#define LUA_REGISTRYINDEX (-10000)
#define LUA_GLOBALSINDEX (-10002)
#define lua_upvalueindex(i) (LUA_GLOBALSINDEX - (i))
#define LUA_MULTRET (-1)
#define LUA_TNIL 0
#define LUA_TBOOLEAN 1
#define LUA_TNUMBER 3
#define LUA_TSTRING 4
#define LUA_TTABLE 5

static struct {
    int (*gettop)(lua_State *);
    void (*settop)(lua_State *, int);
    void (*pushvalue)(lua_State *, int);
    int (*type)(lua_State *, int);
    const char *(*tolstring)(lua_State *, int, size_t *);
    lua_Number (*tonumber)(lua_State *, int);
    int (*toboolean)(lua_State *, int);
    void *(*touserdata)(lua_State *, int);
    void (*pushnumber)(lua_State *, lua_Number);
    void (*pushlstring)(lua_State *, const char *, size_t);
    void (*pushboolean)(lua_State *, int);
    void (*pushlightuserdata)(lua_State *, void *);
    void (*pushcclosure)(lua_State *, lua_CFunction, int);
    void (*createtable)(lua_State *, int, int);
    void (*setfield)(lua_State *, int, const char *);
    void (*rawgeti)(lua_State *, int, int);
    void (*rawseti)(lua_State *, int, int);
    int (*pcall)(lua_State *, int, int, int);
    void (*call)(lua_State *, int, int);
    int (*error)(lua_State *);
    int (*checkstack)(lua_State *, int);
    int (*ref)(lua_State *, int);
    void (*replace)(lua_State *, int);
    void (*rawget)(lua_State *, int);
    int (*gethookmask)(lua_State *);
    int (*gethookcount)(lua_State *);
} lua;

static const char *const lua_names[] = {
    "lua_gettop", "lua_settop", "lua_pushvalue", "lua_type", "lua_tolstring",
    "lua_tonumber", "lua_toboolean", "lua_touserdata", "lua_pushnumber",
    "lua_pushlstring", "lua_pushboolean", "lua_pushlightuserdata",
    "lua_pushcclosure", "lua_createtable", "lua_setfield", "lua_rawgeti",
    "lua_rawseti", "lua_pcall", "lua_call", "lua_error", "lua_checkstack",
    "luaL_ref", "lua_replace", "lua_rawget", "lua_gethookmask", "lua_gethookcount",
};

/* ------------------------------------------------------------ the state */

/* One per sandbox (Lua state).  Never freed: the Lua closures of
 * redis.call point at it and may outlive the Python object; the state
 * itself (and its registry, which holds the refs) belongs to lupa. */
typedef struct {
    lua_State *L;  /* the main state, as lupa calls it */
    /* the bootstrap's FN (handles), G (a script's globals), error
     * handler, hold(ok, result), arm() and disarm() of the hook, and
     * Python's reply function */
    int fn_ref, globals_ref, handler_ref, hold_ref, arm_ref, disarm_ref, reply_ref;
    int hook_every;  /* the hook's count while armed (HOOK_EVERY) */
    int kept;  /* the refs above are set */
    PyObject *command;  /* Scripting._command, or NULL once the Binding is gone */
} binding_t;

/* The state trisque_lua_open saw last, until a Binding takes it (sandboxes
 * are made one at a time, on the node's thread). */
static binding_t *pending = NULL;

static PyObject *error_text(void)
{
    /* the current Python exception as bytes ("ERR <text>"), cleared */
    PyObject *type, *value, *tb, *text = NULL, *out;
    PyErr_Fetch(&type, &value, &tb);
    if (value != NULL)
        text = PyObject_Str(value);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    if (text == NULL) {
        PyErr_Clear();
        return PyBytes_FromString("ERR error during Python call");
    }
    out = PyUnicode_FromFormat("ERR %U", text);
    Py_DECREF(text);
    if (out != NULL)
        Py_SETREF(out, PyUnicode_AsEncodedString(out, "utf-8", "replace"));
    if (out == NULL)
        PyErr_Clear();
    return out;
}

/* A Lua number as lupa gives it: an integral one as an int (Scripting
 * writes it as Redis does), else a float. */
static PyObject *number_to_python(lua_Number d)
{
    if (d >= -9223372036854775808.0 && d < 9223372036854775808.0
            && d == (lua_Number)(long long)d)
        return PyLong_FromLongLong((long long)d);
    return PyFloat_FromDouble(d);
}

/* redis.call (protected = 0) and redis.pcall (1). */
static int redis_command(lua_State *L, int protected)
{
    binding_t *b = (binding_t *)lua.touserdata(L, lua_upvalueindex(1));
    int argc = lua.gettop(L), i, slow = 0;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyObject *args = NULL, *reply = NULL, *failure;
    const char *s;
    Py_ssize_t n;

    if (b->command == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the script engine is gone");
        goto python_error;
    }
    args = PyTuple_New(argc);
    if (args == NULL)
        goto python_error;
    for (i = 0; i < argc; i++) {
        PyObject *arg;
        int t = lua.type(L, i + 1);
        if (t == LUA_TSTRING) {
            size_t len;
            const char *text = lua.tolstring(L, i + 1, &len);
            arg = PyBytes_FromStringAndSize(text, (Py_ssize_t)len);
        } else if (t == LUA_TNUMBER) {
            arg = number_to_python(lua.tonumber(L, i + 1));
        } else {
            /* neither: Scripting._refusal answers Redis's error for it */
            arg = Py_NewRef(Py_None);
        }
        if (arg == NULL)
            goto python_error;
        PyTuple_SET_ITEM(args, i, arg);
    }
    reply = PyObject_CallOneArg(b->command, args);
    Py_CLEAR(args);
    if (reply == NULL)
        goto python_error;
    if (!PyBytes_Check(reply) || PyBytes_GET_SIZE(reply) < 3) {
        PyErr_SetString(PyExc_TypeError, "a command's reply is not RESP");
        goto python_error;
    }
    s = PyBytes_AS_STRING(reply);
    n = PyBytes_GET_SIZE(reply);
    switch (s[0]) {
    case '$':
        if (s[1] == '-') {
            lua.pushboolean(L, 0);
        } else {
            Py_ssize_t p = 1;
            while (p < n && s[p] != '\r')
                p++;
            if (p + 4 > n) {
                slow = 1;
                break;
            }
            lua.pushlstring(L, s + p + 2, (size_t)(n - p - 4));
        }
        break;
    case ':':
        /* (bytes objects end with a NUL: strtoll stops at the CR) */
        lua.pushnumber(L, (lua_Number)strtoll(s + 1, NULL, 10));
        break;
    case '+':
        lua.createtable(L, 0, 1);
        lua.pushlstring(L, s + 1, (size_t)(n - 3));
        lua.setfield(L, -2, "ok");
        break;
    case '-':
        if (!protected) {
            /* raised by the Python reply function: the same ScriptError
             * object as lupa's path gives a script's pcall */
            slow = 1;
            break;
        }
        /* counted in INFO errorstats when it was answered (Scripting) */
        lua.createtable(L, 0, 2);
        lua.pushlstring(L, s + 1, (size_t)(n - 3));
        lua.setfield(L, -2, "err");
        lua.pushboolean(L, 1);
        lua.setfield(L, -2, "ignore_error_stats_update");
        break;
    default:
        slow = 1;
    }
    if (slow) {
        /* arrays, RESP3..., redis.call's errors: Python's reply function,
         * through lupa */
        lua.rawgeti(L, LUA_REGISTRYINDEX, b->reply_ref);
        lua.pushlstring(L, s, (size_t)n);
    }
    Py_DECREF(reply);
    PyGILState_Release(gil);
    if (slow)
        lua.call(L, 1, 1);  /* (a Python error in it is lupa's Lua error) */
    return 1;

python_error:
    /* a Python exception: a Lua error, nothing of Python's held */
    Py_XDECREF(args);
    Py_XDECREF(reply);
    failure = error_text();
    lua.createtable(L, 0, 2);
    if (failure != NULL) {
        lua.pushlstring(L, PyBytes_AS_STRING(failure), (size_t)PyBytes_GET_SIZE(failure));
        Py_DECREF(failure);
    } else {
        lua.pushlstring(L, "ERR error during Python call", 28);
    }
    lua.setfield(L, -2, "err");
    PyGILState_Release(gil);
    return lua.error(L);
}

static int redis_call(lua_State *L) { return redis_command(L, 0); }
static int redis_pcall(lua_State *L) { return redis_command(L, 1); }

/* keep(FN, G, handler, hold, arm, disarm, reply, hook_every): the
 * bootstrap's values C uses, kept in the registry. */
static int keep(lua_State *L)
{
    binding_t *b = (binding_t *)lua.touserdata(L, lua_upvalueindex(1));
    int *refs[] = {&b->fn_ref, &b->globals_ref, &b->handler_ref, &b->hold_ref,
                   &b->arm_ref, &b->disarm_ref, &b->reply_ref};
    int i;
    lua.settop(L, 8);
    b->hook_every = (int)lua.tonumber(L, 8);
    for (i = 0; i < 7; i++) {
        lua.pushvalue(L, i + 1);
        *refs[i] = lua.ref(L, LUA_REGISTRYINDEX);
    }
    b->kept = 1;
    return 0;
}

/* What package.loadlib finds: returns redis.call, redis.pcall and keep
 * for the bootstrap, and leaves the state for the next Binding().  (Called
 * through lupa, which has let go of the GIL: no Python here.) */
__attribute__((visibility("default"))) int trisque_lua_open(lua_State *L)
{
    binding_t *b = (binding_t *)calloc(1, sizeof(binding_t));
    if (b == NULL) {
        lua.pushlstring(L, "out of memory", 13);
        return lua.error(L);
    }
    b->L = L;
    lua.pushlightuserdata(L, b);
    lua.pushcclosure(L, redis_call, 1);
    lua.pushlightuserdata(L, b);
    lua.pushcclosure(L, redis_pcall, 1);
    lua.pushlightuserdata(L, b);
    lua.pushcclosure(L, keep, 1);
    pending = b;
    return 3;
}

/* ------------------------------------------------------- the Binding type */

typedef struct {
    PyObject_HEAD
    binding_t *b;
} Binding;

static int Binding_init(Binding *self, PyObject *args, PyObject *kwargs)
{
    PyObject *command;
    if (!PyArg_ParseTuple(args, "O:Binding", &command))
        return -1;
    if (pending == NULL || !pending->kept) {
        PyErr_SetString(PyExc_RuntimeError, "no Lua state opened (trisque_lua_open, keep)");
        return -1;
    }
    self->b = pending;
    pending = NULL;
    Py_XSETREF(self->b->command, Py_NewRef(command));
    return 0;
}

static int Binding_traverse(Binding *self, visitproc visit, void *arg)
{
    if (self->b != NULL)
        Py_VISIT(self->b->command);
    return 0;
}

static int Binding_clear(Binding *self)
{
    if (self->b != NULL)
        Py_CLEAR(self->b->command);
    return 0;
}

static void Binding_dealloc(Binding *self)
{
    PyObject_GC_UnTrack(self);
    Binding_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* run(function, handle, numkeys, argv): the script (handle) run with
 * argv[3:3+numkeys] as its keys and the rest of argv[3:] as its
 * arguments: a function's two arguments (function true: FCALL's), or
 * KEYS and ARGV (EVAL's).  Returns bytes, an int, a float, True (a
 * status "OK"), False (false), or None: hold() kept the outcome for
 * Sandbox.held. */
static PyObject *Binding_run(Binding *self, PyObject *const *args, Py_ssize_t nargs)
{
    binding_t *b = self->b;
    lua_State *L;
    long handle, numkeys;
    Py_ssize_t argc, i;
    PyObject *argv, *out;
    int base, status, t, fcall;

    if (nargs != 4 || !PyList_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "run(function, handle, numkeys, argv: list)");
        return NULL;
    }
    handle = PyLong_AsLong(args[1]);
    numkeys = PyLong_AsLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    argv = args[3];
    argc = PyList_GET_SIZE(argv) - 3;
    if (numkeys < 0 || argc < numkeys) {
        PyErr_SetString(PyExc_ValueError, "numkeys out of range");
        return NULL;
    }
    for (i = 3; i < argc + 3; i++)
        if (!PyBytes_Check(PyList_GET_ITEM(argv, i))) {
            PyErr_SetString(PyExc_TypeError, "arguments must be bytes");
            return NULL;
        }
    L = b->L;
    if (!lua.checkstack(L, 8)) {
        PyErr_SetString(PyExc_MemoryError, "Lua stack");
        return NULL;
    }
    base = lua.gettop(L);
    lua.rawgeti(L, LUA_REGISTRYINDEX, b->handler_ref);  /* base + 1 */
    lua.rawgeti(L, LUA_REGISTRYINDEX, b->fn_ref);
    lua.rawgeti(L, -1, (int)handle);
    lua.replace(L, -2);  /* base + 2: the script's function */
    fcall = PyObject_IsTrue(args[0]);
    if (!fcall)
        lua.rawgeti(L, LUA_REGISTRYINDEX, b->globals_ref);
    lua.createtable(L, (int)numkeys, 0);
    for (i = 0; i < numkeys; i++) {
        PyObject *item = PyList_GET_ITEM(argv, 3 + i);
        lua.pushlstring(L, PyBytes_AS_STRING(item), (size_t)PyBytes_GET_SIZE(item));
        lua.rawseti(L, -2, (int)i + 1);
    }
    if (!fcall)
        lua.setfield(L, -2, "KEYS");
    lua.createtable(L, (int)(argc - numkeys), 0);
    for (i = numkeys; i < argc; i++) {
        PyObject *item = PyList_GET_ITEM(argv, 3 + i);
        lua.pushlstring(L, PyBytes_AS_STRING(item), (size_t)PyBytes_GET_SIZE(item));
        lua.rawseti(L, -2, (int)(i - numkeys) + 1);
    }
    if (!fcall) {
        lua.setfield(L, -2, "ARGV");
        lua.settop(L, base + 2);  /* (G off: a script takes no arguments) */
    }
    /* The hook stays armed between runs; a killed run (the hook then on
     * every instruction) leaves it off, this puts it back. */
    if (lua.gethookmask(L) == 0 || lua.gethookcount(L) != b->hook_every) {
        lua.rawgeti(L, LUA_REGISTRYINDEX, b->arm_ref);
        lua.pcall(L, 0, 0, 0);  /* (cannot fail; pcall: no panic if it did) */
        lua.settop(L, base + (fcall ? 4 : 2));
    }
    status = lua.pcall(L, fcall ? 2 : 0, 1, base + 1);
    if (lua.gethookcount(L) != b->hook_every) {  /* killed: unhooked */
        lua.rawgeti(L, LUA_REGISTRYINDEX, b->disarm_ref);
        lua.pcall(L, 0, 0, 0);
        lua.settop(L, base + 2);
    }
    /* base + 2: the result, or the handler's error table */
    out = NULL;
    t = lua.type(L, base + 2);
    if (status == 0 && t == LUA_TSTRING) {
        size_t len;
        const char *text = lua.tolstring(L, base + 2, &len);
        out = PyBytes_FromStringAndSize(text, (Py_ssize_t)len);
    } else if (status == 0 && t == LUA_TNUMBER) {
        out = number_to_python(lua.tonumber(L, base + 2));
    } else if (status == 0 && t == LUA_TBOOLEAN && !lua.toboolean(L, base + 2)) {
        out = Py_NewRef(Py_False);
    } else if (status == 0 && t == LUA_TTABLE) {
        /* {ok="OK"} without a string err (the runner's rawgets) */
        size_t len = 0;
        const char *ok;
        lua.pushlstring(L, "ok", 2);
        lua.rawget(L, base + 2);
        ok = lua.type(L, -1) == LUA_TSTRING ? lua.tolstring(L, -1, &len) : NULL;
        if (ok != NULL && len == 2 && ok[0] == 'O' && ok[1] == 'K') {
            lua.pushlstring(L, "err", 3);
            lua.rawget(L, base + 2);
            if (lua.type(L, -1) != LUA_TSTRING)
                out = Py_NewRef(Py_True);
        }
        lua.settop(L, base + 2);
    }
    if (out == NULL && !PyErr_Occurred()) {
        /* anything else: hold(ok, result) for Sandbox.held */
        lua.rawgeti(L, LUA_REGISTRYINDEX, b->hold_ref);
        lua.pushboolean(L, status == 0);
        lua.pushvalue(L, base + 2);
        if (lua.pcall(L, 2, 0, 0) != 0) {
            size_t len = 0;
            const char *text = lua.tolstring(L, -1, &len);
            PyErr_Format(PyExc_RuntimeError, "Lua error: %s", text ? text : "?");
        } else {
            out = Py_NewRef(Py_None);
        }
    }
    lua.settop(L, base);
    return out;
}

static PyMethodDef Binding_methods[] = {
    {"run", (PyCFunction)(void (*)(void))Binding_run, METH_FASTCALL,
     "run(function, handle, numkeys, argv): a script run's plain result, or None"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject BindingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trisque.core.keyspace._lua_call.Binding",
    .tp_basicsize = sizeof(Binding),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Binding(command): the Lua state trisque_lua_open saw last, run from C",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Binding_init,
    .tp_traverse = (traverseproc)Binding_traverse,
    .tp_clear = (inquiry)Binding_clear,
    .tp_dealloc = (destructor)Binding_dealloc,
    .tp_methods = Binding_methods,
};

/* ------------------------------------------------------------ the module */

static int resolve(void)
{
    /* lupa's lua51 extension, already loaded by importing it */
    PyObject *module = PyImport_ImportModule("lupa.lua51"), *file;
    const char *path;
    void *handle, **slots = (void **)&lua;
    size_t i;

    if (module == NULL)
        return -1;
    file = PyObject_GetAttrString(module, "__file__");
    Py_DECREF(module);
    if (file == NULL)
        return -1;
    path = PyUnicode_AsUTF8(file);
    if (path == NULL) {
        Py_DECREF(file);
        return -1;
    }
    handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) {
        PyErr_Format(PyExc_ImportError, "lupa.lua51 is not loaded: %s", dlerror());
        Py_DECREF(file);
        return -1;
    }
    Py_DECREF(file);
    for (i = 0; i < sizeof(lua_names) / sizeof(lua_names[0]); i++) {
        slots[i] = dlsym(handle, lua_names[i]);
        if (slots[i] == NULL) {
            PyErr_Format(PyExc_ImportError, "lupa.lua51 does not export %s", lua_names[i]);
            return -1;
        }
    }
    return 0;
}

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_lua_call",
    "Script runs and redis.call in C, on lupa.lua51's Lua state (lua_call.c).",
    -1, NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__lua_call(void)
{
    PyObject *module;
    if (sizeof(lua) != sizeof(lua_names) / sizeof(lua_names[0]) * sizeof(void *)) {
        PyErr_SetString(PyExc_ImportError, "lua_call.c: the symbol table is out of step");
        return NULL;
    }
    if (resolve() < 0)
        return NULL;
    if (PyType_Ready(&BindingType) < 0)
        return NULL;
    module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddObjectRef(module, "Binding", (PyObject *)&BindingType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
