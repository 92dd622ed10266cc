/*
 * contract_pair.c: one of two games that check, field by field, what the C contract promises
 * about the other (tests/contract_pair.rs). Both run the same script with a different name;
 * each checks what it gets from the other, as a test written only against SPEC section 4 and
 * docs/c-api.md would:
 *
 *   - its own NET_EVENT_CONNECTED: player_id = own slot, every other field zero;
 *   - the other's PLAYER_CONNECTED (player_id, text = name) before its PLAYER_JOINED, and the
 *     unused fields of both zero;
 *   - after both joined, each sets one ship state (every field, the game area full) and sends
 *     every remote event kind once, with extreme values (ids 0xFFFFFFFF-ish, class 0xFFFF, list
 *     15, a 255-byte UTF-8 text with a tab, a 31-byte name, custom data of 0 and 256 bytes);
 *     the receiver gets each once, in order, from the sender's slot, with every field exactly
 *     as sent and every field the type does not use zero;
 *   - NET_FetchOwner of each created object is the sender's slot while handling its creation
 *     event (except the object killed in the same frame), and -1 once the kill event is polled;
 *   - NET_FetchPlayerName gives the new name once its PLAYER_NAME event is polled, and
 *     NET_GetPlayerState the exact state the other set;
 *   - at the end one game says "bye" and disconnects in the same frame: the other gets the text
 *     (events queued before NETs_Disconnect still go out) and, while handling it, still the
 *     sender's name and last state (its PLAYER_DISCONNECTED is not polled yet), then
 *     PLAYER_DISCONNECTED with its slot, and after that the slot has no name and no state.
 *
 * Usage: contract_pair --name NAME --peer HOST:PORT [--exec LINE]... [--leave] [--name-anywhere]
 *                      [--duration MS]
 *   --leave          this game disconnects at the end (the other waits for it to go)
 *   --name-anywhere  the other's PLAYER_NAME may come anywhere among its events (through a
 *                    server, which accepts the name first), still exactly once
 *
 *        contract_pair --play FILE
 *   --play FILE      play the demo FILE in this fresh instance, print its events, end with it
 *
 * Prints one ok/FAIL line per check and "contract_pair: N checks, M failed"; every polled event
 * also as an "EVENT" line.
 */

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define NEW_NAME_FMT "%s-renamed-0123456789abcdefghij" /* cut to 31 bytes */

static void print_event(const NET_Event *e)
{
    uint32_t hash = 2166136261u; /* FNV-1a of the data bytes */
    uint32_t i;

    for (i = 0; i < e->data_len && i < NET_EVENT_DATA_LEN; i++) {
        hash = (hash ^ e->data[i]) * 16777619u;
    }
    printf("EVENT %s player=%d object=%u class=%u target=%u flags=%u list=%u custom=%u "
           "pos=%g,%g,%g dir=%g,%g,%g orient=%g,%g,%g,%g len=%u data=%08x text=\"%s\"\n",
           check_event_name(e->type), (int)e->player_id, (unsigned)e->object_id,
           (unsigned)e->object_class, (unsigned)e->target_id, (unsigned)e->flags,
           (unsigned)e->list_id, (unsigned)e->custom_type, e->pos[0], e->pos[1], e->pos[2],
           e->dir[0], e->dir[1], e->dir[2], e->orient[0], e->orient[1], e->orient[2],
           e->orient[3], (unsigned)e->data_len, (unsigned)hash, e->text);
    fflush(stdout);
}

/* Compare every documented field of `got` with `want` (whose unused fields are zero), bit for
 * bit for the floats; describe the first difference in `why`. */
/* ----- what each game sends (a function of its slot and name) ----------------------------------- */

#define SCRIPT_LEN 12

struct script {
    NET_Event events[SCRIPT_LEN]; /* what the receiver must poll, in order */
    int count;
    int name_index; /* where the PLAYER_NAME event is */
    char new_name[32];
    NET_ShipState state;
};

static NET_Event *add(struct script *s, uint32_t type, int32_t slot)
{
    NET_Event *e = &s->events[s->count++];

    memset(e, 0, sizeof *e);
    e->type = type;
    e->player_id = slot;
    return e;
}

/* The script of the game in `slot` named `name`. */
static void make_script(struct script *s, int32_t slot, const char *name)
{
    NET_Event *e;
    int i;

    memset(s, 0, sizeof *s);
    e = add(s, NET_EVENT_CREATE_OBJECT, slot);
    e->object_id = 0xFFFFFF00u + (uint32_t)slot;
    e->object_class = 0xFFFF;
    check_set3(e->pos, -1.0e30f, 1.17549435e-38f, -0.0f);
    e->orient[0] = 0.5f;
    e->orient[1] = -0.5f;
    e->orient[2] = 0.5f;
    e->orient[3] = -0.5f;
    e->flags = 0xFFFFFFFFu;
    e = add(s, NET_EVENT_CREATE_LASER, slot);
    e->object_id = 0x80000000u + (uint32_t)slot;
    e->object_class = 0;
    check_set3(e->pos, 3.4e38f, -3.4e38f, 1.0e-45f);
    check_set3(e->dir, 0.0f, -1.0f, 0.0f);
    e = add(s, NET_EVENT_CREATE_MISSILE, slot);
    e->object_id = 77u + (uint32_t)slot;
    e->object_class = 0x8001;
    check_set3(e->pos, 1.0f, 2.0f, 3.0f);
    check_set3(e->dir, 0.25f, 0.5f, -0.125f);
    e->target_id = 0xFFFFFFFFu;
    e = add(s, NET_EVENT_CREATE_EXTRA, slot);
    e->object_id = 1u + (uint32_t)slot;
    e->object_class = 0xFFFF; /* the extra index */
    check_set3(e->pos, -7.0f, 8.5f, 1.0e20f);
    e = add(s, NET_EVENT_PARTICLE_OBJECT, slot);
    e->object_class = 0xFFFE;
    check_set3(e->pos, 0.1f, -0.2f, 0.3f);
    e = add(s, NET_EVENT_KILL_OBJECT, slot);
    e->object_id = 0xFFFFFF00u + (uint32_t)slot;
    e->list_id = 15;
    e = add(s, NET_EVENT_TEXT, slot);
    /* 255 bytes: a tab, two-, three- and four-byte UTF-8, then filler. */
    snprintf(e->text, sizeof e->text, "%s\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x9a\x80 ", name);
    for (i = (int)strlen(e->text); i < 255; i++) {
        e->text[i] = (char)('a' + i % 26);
    }
    e->text[255] = '\0';
    s->name_index = s->count;
    e = add(s, NET_EVENT_PLAYER_NAME, slot);
    snprintf(s->new_name, sizeof s->new_name, NEW_NAME_FMT, name);
    snprintf(e->text, sizeof e->text, "%s", s->new_name);
    e = add(s, NET_EVENT_CUSTOM, slot);
    e->custom_type = 0xFFFF;
    e->flags = NET_SEND_RELIABLE;
    e->data_len = 0;
    e = add(s, NET_EVENT_CUSTOM, slot);
    e->custom_type = 0;
    e->flags = NET_SEND_RELIABLE;
    e->data_len = NET_EVENT_DATA_LEN;
    for (i = 0; i < NET_EVENT_DATA_LEN; i++) {
        e->data[i] = (uint8_t)(255 - i + slot);
    }
    e = add(s, NET_EVENT_TEXT, slot);
    snprintf(e->text, sizeof e->text, "done");

    memset(&s->state, 0, sizeof s->state);
    check_set3(s->state.pos, 1000.5f + (float)slot, -2.25f, 1.0e-3f);
    s->state.orient[0] = 0.0f;
    s->state.orient[1] = 0.70710677f;
    s->state.orient[2] = 0.0f;
    s->state.orient[3] = 0.70710677f;
    check_set3(s->state.vel, -1.5f, 0.0f, 99.0f);
    for (i = 0; i < NET_SHIP_GAME_AREA; i++) {
        s->state.game[i] = (uint8_t)(0xF0 ^ (i * 7) ^ slot);
    }
}

/* Send the script (the events in order). Returns the number of calls that failed. */
static int send_script(const struct script *s)
{
    int failed = 0, i;

    for (i = 0; i < s->count; i++) {
        const NET_Event *e = &s->events[i];
        int32_t rc = check_send_event(e, e->pos);
        char what[64];

        snprintf(what, sizeof what, "sending %s (#%d)", check_event_name(e->type), i);
        expect_code(what, rc, NET_OK);
        failed += rc != NET_OK;
    }
    return failed;
}

/* ----- the game ------------------------------------------------------------------------------- */

struct game {
    const char *name;
    int32_t slot;
    int32_t other;       /* the other's slot, -1 until PLAYER_CONNECTED */
    char other_name[32]; /* its name as PLAYER_CONNECTED gave it */
    int other_joined;
    int other_left;
    int other_unjoined;
    struct script mine;
    struct script theirs;
    int next;     /* index of the next expected event of the other's script */
    int sent;
    int done;     /* got the other's whole script */
    int disconnected;
    int got_bye;
    int got_name;
};

/* --name-anywhere: the PLAYER_NAME event may come anywhere in the other's sequence. */
static int name_anywhere;

static void frame(void)
{
    NETs_MaintainNet();
    check_sleep_ms(5);
}

/* Whether the whole script of the other has arrived: then its state is checked. */
static void check_done(struct game *g)
{
    NET_ShipState state;
    int32_t rc;

    if (g->done || g->next < g->theirs.count || !g->got_name) {
        return;
    }
    rc = NET_GetPlayerState(g->other, &state);
    expect_code("NET_GetPlayerState of the other", rc, NET_OK);
    expect_true("the other's state is exactly what it set",
                rc == NET_OK && memcmp(&state, &g->theirs.state, sizeof state) == 0, "");
    g->done = 1;
}

/* Handle one polled event. */
static void handle(struct game *g, const NET_Event *e)
{
    char why[200], what[160];

    print_event(e);
    switch (e->type) {
    case NET_EVENT_CONNECTED: {
        NET_Event want;

        memset(&want, 0, sizeof want);
        want.type = NET_EVENT_CONNECTED;
        want.player_id = e->player_id;
        expect_true("CONNECTED: player_id is a slot 0-15", e->player_id >= 0 && e->player_id < 16,
                    "");
        expect_true("CONNECTED: every other field zero", check_same_event(e, &want, why, sizeof why),
                    why);
        g->slot = e->player_id;
        make_script(&g->mine, g->slot, g->name);
        return;
    }
    case NET_EVENT_PLAYER_CONNECTED: {
        NET_Event want;

        if (e->player_id == g->slot) {
            expect_true("PLAYER_CONNECTED is not about the own slot", 0, "");
            return;
        }
        expect_true("PLAYER_CONNECTED: only one other player", g->other < 0 || g->other_left,
                    "");
        g->other = e->player_id;
        g->other_left = 0;
        snprintf(g->other_name, sizeof g->other_name, "%.31s", e->text);
        memset(&want, 0, sizeof want);
        want.type = e->type;
        want.player_id = e->player_id;
        snprintf(want.text, sizeof want.text, "%s", g->other_name);
        expect_true("PLAYER_CONNECTED: player_id and name, every other field zero",
                    e->text[0] != '\0' && check_same_event(e, &want, why, sizeof why), why);
        {
            const char *name = NET_FetchPlayerName(e->player_id);

            snprintf(why, sizeof why, "\"%s\"", name != NULL ? name : "(NULL)");
            expect_true("NET_FetchPlayerName of a just-connected player is its name",
                        name != NULL && strcmp(name, g->other_name) == 0, why);
        }
        make_script(&g->theirs, e->player_id, g->other_name);
        return;
    }
    case NET_EVENT_PLAYER_JOINED: {
        NET_Event want;

        if (e->player_id == g->slot) {
            return; /* the own join may be reported; not checked here */
        }
        expect_true("PLAYER_JOINED comes after PLAYER_CONNECTED of the same slot",
                    e->player_id == g->other && !g->other_left, "");
        memset(&want, 0, sizeof want);
        want.type = e->type;
        want.player_id = e->player_id;
        expect_true("PLAYER_JOINED: player_id only", check_same_event(e, &want, why, sizeof why), why);
        g->other_joined = 1;
        return;
    }
    case NET_EVENT_PLAYER_UNJOINED:
        if (e->player_id == g->other) {
            g->other_unjoined = 1;
        }
        return;
    case NET_EVENT_PLAYER_DISCONNECTED: {
        expect_true("PLAYER_DISCONNECTED is about the other's slot", e->player_id == g->other,
                    "");
        expect_true("PLAYER_DISCONNECTED has a reason", e->text[0] != '\0', e->text);
        g->other_left = 1;
        {
            const char *name = NET_FetchPlayerName(e->player_id);
            NET_ShipState state;
            int32_t rc = NET_GetPlayerState(e->player_id, &state);

            expect_true("after PLAYER_DISCONNECTED the slot has no name", name == NULL,
                        name != NULL ? name : "");
            expect_code("after PLAYER_DISCONNECTED NET_GetPlayerState of the slot", rc,
                        NET_ERR_INVALID_ARGUMENT);
        }
        return;
    }
    case NET_EVENT_DISCONNECTED:
        g->disconnected = 1;
        return;
    case NET_EVENT_ERROR:
        expect_true("no ERROR event", 0, e->text);
        return;
    default:
        break;
    }
    if (e->type == NET_EVENT_TEXT && g->done && strcmp(e->text, "bye") == 0) {
        /* The PLAYER_DISCONNECTED that follows came in the same frame: the leaving player is
         * still looked up (its last name and state) until that event is polled
         * (docs/decisions.md). */
        const char *name = NET_FetchPlayerName(e->player_id);
        NET_ShipState state;
        int32_t rc = NET_GetPlayerState(e->player_id, &state);

        expect_true("the last text comes from the other's slot", e->player_id == g->other, "");
        snprintf(why, sizeof why, "\"%s\" (want \"%s\")", name != NULL ? name : "(NULL)",
                 g->theirs.new_name);
        expect_true("NET_FetchPlayerName of the sender while handling its last text",
                    name != NULL && strcmp(name, g->theirs.new_name) == 0, why);
        expect_code("NET_GetPlayerState of the sender while handling its last text", rc, NET_OK);
        expect_true("NET_GetPlayerState of the sender while handling its last text is its last",
                    rc == NET_OK && memcmp(&state, &g->theirs.state, sizeof state) == 0, "");
        g->got_bye = 1;
        return;
    }
    /* A remote event or a text: the next one of the other's script. */
    if (e->player_id == -1 && e->type == NET_EVENT_TEXT) {
        return; /* a server's message line */
    }
    if (g->other < 0 || e->player_id != g->other) {
        snprintf(why, sizeof why, "player_id %d, the other is %d", (int)e->player_id,
                 (int)g->other);
        expect_true("a remote event comes from the other's slot", 0, why);
        return;
    }
    if (name_anywhere && e->type == NET_EVENT_PLAYER_NAME) {
        /* Through a server the new name goes out once the server accepted it: it is not
         * ordered with the events around it (docs/c-api.md). */
        const NET_Event *want = &g->theirs.events[g->theirs.name_index];
        const char *name;

        expect_true("PLAYER_NAME from the other, once", !g->got_name, "");
        expect_true("PLAYER_NAME from the other: every field as sent",
                    check_same_event(e, want, why, sizeof why), why);
        name = NET_FetchPlayerName(g->other);
        snprintf(why, sizeof why, "\"%s\"", name != NULL ? name : "(NULL)");
        expect_true("NET_FetchPlayerName after PLAYER_NAME is the new name",
                    name != NULL && strcmp(name, want->text) == 0, why);
        g->got_name = 1;
        check_done(g);
        return;
    }
    if (name_anywhere && g->next == g->theirs.name_index) {
        g->next++;
    }
    if (g->next >= g->theirs.count) {
        expect_true("no event after the other's last one", 0, check_event_name(e->type));
        return;
    }
    {
        const NET_Event *want = &g->theirs.events[g->next];

        snprintf(what, sizeof what, "event #%d from the other: %s", g->next,
                 check_event_name(want->type));
        expect_true(what, check_same_event(e, want, why, sizeof why), why);
        g->next++;
        switch (want->type) {
        case NET_EVENT_CREATE_OBJECT:
            /* Killed in the same frame it was created: the lookups answer as of the last
             * NETs_MaintainNet, so its owner may already be gone (docs/decisions.md). */
            break;
        case NET_EVENT_CREATE_LASER:
        case NET_EVENT_CREATE_MISSILE:
        case NET_EVENT_CREATE_EXTRA: {
            int32_t owner = NET_FetchOwner(want->object_id);

            snprintf(what, sizeof what, "NET_FetchOwner(%u) while handling its %s",
                     (unsigned)want->object_id, check_event_name(want->type));
            snprintf(why, sizeof why, "%d (want %d)", (int)owner, (int)g->other);
            expect_true(what, owner == g->other, why);
            break;
        }
        case NET_EVENT_KILL_OBJECT: {
            int32_t owner = NET_FetchOwner(want->object_id);

            snprintf(why, sizeof why, "%d", (int)owner);
            expect_true("NET_FetchOwner of a killed object is -1", owner == -1, why);
            break;
        }
        case NET_EVENT_PLAYER_NAME: {
            const char *name = NET_FetchPlayerName(g->other);

            snprintf(why, sizeof why, "\"%s\"", name != NULL ? name : "(NULL)");
            expect_true("NET_FetchPlayerName after PLAYER_NAME is the new name",
                        name != NULL && strcmp(name, want->text) == 0, why);
            break;
        }
        default:
            break;
        }
        if (!name_anywhere && want->type == NET_EVENT_PLAYER_NAME) {
            g->got_name = 1;
        }
        check_done(g);
    }
}

static void poll_all(struct game *g)
{
    NET_Event e;
    int32_t rc;

    while ((rc = NET_PollEvent(&e)) == 1) {
        handle(g, &e);
    }
    if (rc != 0) {
        expect_code("NET_PollEvent", rc, 0);
    }
}

/* --play FILE: play a demo in this fresh instance and print its events as a live game does. */
static int play(const char *file)
{
    static char out[4096];
    char line[600];
    NET_Event e;
    long long end = check_now_ms() + 30000;
    int32_t rc;

    expect_code("NET_Init()", NET_Init(), NET_OK);
    snprintf(line, sizeof line, "play %s", file);
    rc = NET_ConsoleExec(line, out, sizeof out);
    expect_code(line, rc, NET_OK);
    while (rc == NET_OK && check_now_ms() < end) {
        frame();
        while (NET_PollEvent(&e) == 1) {
            print_event(&e);
        }
        if (NET_ConsoleExec("status", out, sizeof out) != NET_OK ||
            strstr(out, "demo playing") == NULL) {
            break;
        }
    }
    expect_true("the demo ended by itself", check_now_ms() < end, "");
    NET_Shutdown();
    return check_finish("contract_pair");
}

int main(int argc, char **argv)
{
    static struct game g;
    struct check_game_args args = {NULL, NULL, {NULL}, 0, 20000};
    int leave = 0, i;
    long duration;
    long long deadline;
    NET_ShipState moving;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--leave") == 0) {
            leave = 1;
        } else if (i + 1 < argc && strcmp(argv[i], "--play") == 0) {
            return play(argv[i + 1]);
        } else if (strcmp(argv[i], "--name-anywhere") == 0) {
            name_anywhere = 1;
        } else if (!check_game_arg(&args, argc, argv, &i)) {
            fprintf(stderr, "usage: contract_pair --name NAME --peer HOST:PORT [--exec LINE]... "
                            "[--leave] [--duration MS]\n");
            return 2;
        }
    }
    if (!check_game_args_given(&args, "contract_pair")) {
        return 2;
    }
    g.name = args.name;
    duration = args.duration;
    g.slot = -1;
    g.other = -1;
    check_init_with_execs(&args);
    expect_code("NET_SetPlayerName", NET_SetPlayerName(g.name), NET_OK);
    check_connect(args.peer);

    /* A moving ship until the script is sent: the receiver must see the last state only. */
    memset(&moving, 0, sizeof moving);
    moving.orient[3] = 1.0f;
    deadline = check_now_ms() + duration;
    while (check_now_ms() < deadline) {
        moving.pos[0] += 1.0f;
        if (!g.sent) {
            NET_SetLocalState(&moving);
        }
        frame();
        poll_all(&g);
        if (g.slot >= 0 && NETs_Join() != NET_OK) {
            expect_code("NETs_Join", NET_ERR_STATE, NET_OK);
        }
        if (!g.sent && g.slot >= 0 && g.other >= 0 && g.other_joined) {
            /* The state first, then the events: the events' packet carries it. */
            expect_code("NET_SetLocalState (final state)", NET_SetLocalState(&g.mine.state),
                        NET_OK);
            frame();
            send_script(&g.mine);
            g.sent = 1;
        }
        if (g.done && g.sent) {
            break;
        }
    }
    expect_true("got the other's whole script in time", g.done, "");
    {
        NET_ShipState own;

        expect_code("NET_GetPlayerState(own slot)", NET_GetPlayerState(g.slot, &own), NET_OK);
        expect_true("the own slot's state is the one set last",
                    memcmp(&own, &g.mine.state, sizeof own) == 0, "");
    }
    if (leave) {
        /* Let the other get our last events acknowledged, then leave. */
        long long until = check_now_ms() + 1000;

        while (check_now_ms() < until) {
            frame();
            poll_all(&g);
        }
        /* A last word and off, in the same frame, as a player quits. */
        expect_code("NET_RmEvSendText(\"bye\") right before leaving", NET_RmEvSendText("bye"),
                    NET_OK);
        expect_code("NETs_Disconnect", NETs_Disconnect(), NET_OK);
        until = check_now_ms() + 3000;
        while (check_now_ms() < until && !g.disconnected) {
            frame();
            poll_all(&g);
        }
        expect_true("NET_EVENT_DISCONNECTED after NETs_Disconnect", g.disconnected, "");
        expect_true("after leaving, NET_FetchPlayerName(other) is NULL",
                    NET_FetchPlayerName(g.other) == NULL, "");
    } else {
        long long until = check_now_ms() + duration;

        while (check_now_ms() < until && !g.other_left) {
            frame();
            poll_all(&g);
        }
        expect_true("the other's leaving arrives as PLAYER_DISCONNECTED", g.other_left, "");
        expect_true("the other's last text arrived before it left", g.got_bye, "");
    }
    NET_Shutdown();
    return check_finish("contract_pair");
}
