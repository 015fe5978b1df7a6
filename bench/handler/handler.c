// SPDX-License-Identifier: MIT
/*
 * handler: the least a program does to serve one gattd characteristic through
 * org.gattd.Handler1 (docs/control-api.md), for bench/loadgen --handler.
 *
 * Connects to $DBUS_SYSTEM_BUS_ADDRESS, exports /bench/handler, claims the
 * id given as argv[1] (default "rw", the read/write characteristic of
 * bench/configs/bench.json) with RegisterHandler, prints "registered", then
 * answers Read with the bytes 00 11 22 33 (what loadgen expects) and accepts
 * every Write, until SIGTERM.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-bus.h>

static const unsigned char value[] = {0x00, 0x11, 0x22, 0x33};

static int on_read(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)ud;
    (void)e;
    sd_bus_message *reply = NULL;
    int r = sd_bus_message_new_method_return(m, &reply);
    if (r >= 0)
        r = sd_bus_message_append_array(reply, 'y', value, sizeof value);
    if (r >= 0)
        r = sd_bus_send(NULL, reply, NULL);
    sd_bus_message_unref(reply);
    return r < 0 ? r : 1;
}

static int on_write(sd_bus_message *m, void *ud, sd_bus_error *e)
{
    (void)ud;
    (void)e;
    return sd_bus_reply_method_return(m, "");
}

static const sd_bus_vtable vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("Read", "sa{sv}", "ay", on_read, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Write", "saya{sv}", "", on_write, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END,
};

int main(int argc, char **argv)
{
    const char *id = argc > 1 ? argv[1] : "rw";
    sd_bus *bus = NULL;
    sd_bus_error error = SD_BUS_ERROR_NULL;
    int r = sd_bus_open_system(&bus);
    if (r >= 0)
        r = sd_bus_add_object_vtable(bus, NULL, "/bench/handler", "org.gattd.Handler1", vtable, NULL);
    if (r >= 0)
        r = sd_bus_call_method(bus, "org.gattd", "/org/gattd", "org.gattd.Manager1", "RegisterHandler", &error,
                               NULL, "oasa{sv}", "/bench/handler", 1, id, 0);
    if (r < 0) {
        fprintf(stderr, "handler: %s\n", error.message ? error.message : strerror(-r));
        return 1;
    }
    printf("registered\n");
    fflush(stdout);
    for (;;) {
        r = sd_bus_process(bus, NULL);
        if (r < 0)
            break;
        if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
            break;
    }
    sd_bus_flush_close_unref(bus);
    return 0;
}
