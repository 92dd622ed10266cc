/*
 * three_games.c: one of three players of a game (peer to peer, through a gameserver or through a
 * slotserver) that checks, field by field, what the others' remote events look like to it, as a
 * hidden acceptance test written only from SPEC sections 4, 6 and 8 and docs/c-api.md would
 * (tests/three_games.rs). What contract_pair.c checks for two players is not repeated; this adds:
 *
 *   - three players: every event of each sender reaches both others from the slot each receiver
 *     knows it by, every field as sent and every unused field zero, reliable ones once and in
 *     order per sender, interleaved with the third player's;
 *   - custom events of 0, 1, 255 and 256 bytes, reliable (once, in order) and unreliable (at most
 *     once, every byte), and 257 bytes refused (NET_ERR_TOO_LARGE) both ways;
 *   - SPEC 8, "for time-critical events the game's current object position is asked for
 *     immediately before sending": the sender fires its object, laser and missile at one position
 *     and its position callback (NET_SetObjectPositionCallback) says they moved: the receivers get
 *     the callback's position, an extra and a particle keep theirs;
 *   - a rename in the middle of the events: the others' PLAYER_NAME comes no later than the
 *     events the sender queued after NET_RmEvPlayerName, and NET_FetchPlayerName gives the new
 *     name while they are handled (with --name-in-place: exactly at its place, peer to peer);
 *   - NET_FetchOwner: the creator while handling a creation (the object killed in the same
 *     frame excepted, docs/c-api.md), -1 once killed, and at the end;
 *   - NET_GetPlayerState of each other (exactly the state it set), of the own slot (own state)
 *     and of unknown ids (NET_ERR_INVALID_ARGUMENT);
 *   - argument bounds while in a game: names of 31 / 32 bytes, empty, NULL; a 255- and a 256-byte
 *     text; NULL pos / dir / origin / orient / data;
 *   - at the end a "VIEW slot=name ..." line with NET_FetchPlayerName of slots 0-15, which the
 *     test compares across the three players.
 *
 * Usage: three_games --name NAME --peer HOST:PORT [--exec LINE]... [--name-in-place]
 *                    [--duration MS]
 * Prints one ok/FAIL line per check, "EVENT" lines, the VIEW line and
 * "three_games: N checks, M failed".
 */

#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define OTHERS 2
#define SCRIPT_MAX 24
#define MOVED 1000.0f /* how far the position callback says a fired object moved */

static void print_event(const NET_Event *e)
{
    printf("EVENT %s player=%d object=%u class=%u custom=%u len=%u pos=%g,%g,%g text=\"%.40s\"\n",
           check_event_name(e->type), (int)e->player_id, (unsigned)e->object_id,
           (unsigned)e->object_class, (unsigned)e->custom_type, (unsigned)e->data_len, e->pos[0],
           e->pos[1], e->pos[2], e->text);
    fflush(stdout);
}

/* ----- what each player sends (a function of its slot and name) -------------------------------- */

struct script {
    NET_Event events[SCRIPT_MAX]; /* in the order sent; pos of object/laser/missile as received */
    float fired[SCRIPT_MAX][3];   /* the position given to the NET_RmEv call */
    int count;
    int name_index;
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

static void custom(struct script *s, int32_t slot, uint32_t len, int reliable)
{
    NET_Event *e = add(s, NET_EVENT_CUSTOM, slot);
    uint32_t i;

    e->custom_type = (uint16_t)((reliable ? 0x1000u : 0x2000u) + len);
    e->flags = reliable ? NET_SEND_RELIABLE : 0;
    e->data_len = len;
    for (i = 0; i < len; i++) {
        e->data[i] = (uint8_t)(i * 31u + (uint32_t)slot * 7u + len);
    }
}

static uint32_t object_base(int32_t slot)
{
    return 0x01000000u * (uint32_t)(slot + 1);
}

static void make_script(struct script *s, int32_t slot, const char *name)
{
    NET_Event *e;
    int i;

    memset(s, 0, sizeof *s);
    e = add(s, NET_EVENT_CREATE_OBJECT, slot);
    e->object_id = object_base(slot) + 1;
    e->object_class = 7;
    e->orient[3] = 1.0f;
    e->flags = 0x5;
    e = add(s, NET_EVENT_CREATE_LASER, slot);
    e->object_id = object_base(slot) + 2;
    e->object_class = 9;
    check_set3(e->dir, 1.0f, 0.0f, 0.0f);
    e = add(s, NET_EVENT_CREATE_MISSILE, slot);
    e->object_id = object_base(slot) + 3;
    e->object_class = 11;
    check_set3(e->dir, 0.0f, 0.0f, -1.0f);
    e->target_id = object_base(slot) + 1;
    e = add(s, NET_EVENT_CREATE_EXTRA, slot);
    e->object_id = object_base(slot) + 4;
    e->object_class = 3;
    e = add(s, NET_EVENT_PARTICLE_OBJECT, slot);
    e->object_class = 12;
    for (i = 0; i < s->count; i++) {
        /* fired at (slot, i, -i); object, laser and missile are asked for at send time */
        check_set3(s->fired[i], (float)slot, (float)i, -(float)i);
        memcpy(s->events[i].pos, s->fired[i], sizeof s->fired[i]);
        if (i < 3) {
            s->events[i].pos[0] += MOVED;
        }
    }
    e = add(s, NET_EVENT_KILL_OBJECT, slot);
    e->object_id = object_base(slot) + 1;
    e->list_id = 4;
    e = add(s, NET_EVENT_TEXT, slot);
    snprintf(e->text, sizeof e->text, "%s before the rename", name);
    s->name_index = s->count;
    e = add(s, NET_EVENT_PLAYER_NAME, slot);
    /* 31 bytes: the longest name */
    snprintf(s->new_name, sizeof s->new_name, "%s-0123456789012345678901234567", name);
    snprintf(e->text, sizeof e->text, "%s", s->new_name);
    e = add(s, NET_EVENT_TEXT, slot);
    snprintf(e->text, sizeof e->text, "said after the rename");
    custom(s, slot, 0, 1);
    custom(s, slot, 1, 1);
    custom(s, slot, 255, 1);
    custom(s, slot, 256, 1);
    custom(s, slot, 0, 0);
    custom(s, slot, 1, 0);
    custom(s, slot, 255, 0);
    custom(s, slot, 256, 0);
    e = add(s, NET_EVENT_TEXT, slot);
    for (i = 0; i < 255; i++) {
        e->text[i] = (char)('A' + (i + slot) % 26);
    }
    e->text[255] = '\0';
    e = add(s, NET_EVENT_TEXT, slot);
    snprintf(e->text, sizeof e->text, "done");

    memset(&s->state, 0, sizeof s->state);
    check_set3(s->state.pos, 10.0f * (float)slot, 0.5f, -3.0f);
    s->state.orient[1] = 1.0f;
    check_set3(s->state.vel, 0.25f, (float)slot, -0.0f);
    for (i = 0; i < NET_SHIP_GAME_AREA; i++) {
        s->state.game[i] = (uint8_t)(i * 13 + slot);
    }
}

static int is_unreliable(const NET_Event *e)
{
    return e->type == NET_EVENT_CUSTOM && e->flags == 0;
}

/* The position callback: the objects this player fired moved by MOVED in x since. */
struct fired {
    uint32_t id;
    float pos[3];
    int asked;
};
static struct fired fired_objects[3];

static int32_t object_position(uint32_t object_id, float *pos, void *user)
{
    int i;

    (void)user;
    for (i = 0; i < 3; i++) {
        if (fired_objects[i].id == object_id) {
            fired_objects[i].asked++;
            pos[0] = fired_objects[i].pos[0] + MOVED;
            pos[1] = fired_objects[i].pos[1];
            pos[2] = fired_objects[i].pos[2];
            return 1;
        }
    }
    return 0;
}

static void send_script(const struct script *s)
{
    int i;

    for (i = 0; i < s->count; i++) {
        const NET_Event *e = &s->events[i];
        const float *at = s->fired[i];
        int32_t rc;
        char what[80];

        if (i < 3) {
            fired_objects[i].id = e->object_id;
            memcpy(fired_objects[i].pos, at, sizeof fired_objects[i].pos);
        }
        rc = check_send_event(e, at);
        snprintf(what, sizeof what, "sending #%d %s (len %u, flags %u)", i,
                 check_event_name(e->type), (unsigned)e->data_len, (unsigned)e->flags);
        expect_code(what, rc, NET_OK);
    }
}

/* Calls refused while in a game: bounds and NULL pointers. Nothing of them may arrive. */
static void refused_calls(void)
{
    static const float p[3] = {1.0f, 2.0f, 3.0f}, q[4] = {0.0f, 0.0f, 0.0f, 1.0f};
    static uint8_t data[300];
    char text[300];

    memset(text, 'x', sizeof text);
    text[256] = '\0';
    expect_code("in game: NET_RmEvSendText(256 bytes)", NET_RmEvSendText(text), NET_ERR_TOO_LARGE);
    text[299] = '\0';
    expect_code("in game: NET_RmEvSendText(299 bytes)", NET_RmEvSendText(text), NET_ERR_TOO_LARGE);
    expect_code("in game: NET_RmEvSendText(NULL)", NET_RmEvSendText(NULL),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_RmEvCustom(257 bytes, reliable)",
                NET_RmEvCustom(1, data, 257, NET_SEND_RELIABLE), NET_ERR_TOO_LARGE);
    expect_code("in game: NET_RmEvCustom(257 bytes, unreliable)", NET_RmEvCustom(1, data, 257, 0),
                NET_ERR_TOO_LARGE);
    expect_code("in game: NET_RmEvCustom(NULL data, 1 byte)",
                NET_RmEvCustom(1, NULL, 1, NET_SEND_RELIABLE), NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_RmEvCreateObject(NULL pos)",
                NET_RmEvCreateObject(900, 1, NULL, q, 0), NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_RmEvCreateObject(NULL orient)",
                NET_RmEvCreateObject(900, 1, p, NULL, 0), NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_RmEvCreateLaser(NULL pos)", NET_RmEvCreateLaser(901, 1, NULL, p),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_RmEvCreateLaser(NULL dir)", NET_RmEvCreateLaser(901, 1, p, NULL),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_RmEvCreateMissile(NULL dir)",
                NET_RmEvCreateMissile(902, 1, p, NULL, 0), NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_RmEvCreateExtra(NULL pos)", NET_RmEvCreateExtra(903, 1, NULL),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_RmEvParticleObject(NULL origin)", NET_RmEvParticleObject(1, NULL),
                NET_ERR_INVALID_ARGUMENT);
    memset(text, 'n', sizeof text);
    text[32] = '\0';
    expect_code("in game: NET_RmEvPlayerName(32 bytes)", NET_RmEvPlayerName(text),
                NET_ERR_TOO_LARGE);
    expect_code("in game: NET_RmEvPlayerName(\"\")", NET_RmEvPlayerName(""),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_RmEvPlayerName(NULL)", NET_RmEvPlayerName(NULL),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_SetPlayerName(32 bytes)", NET_SetPlayerName(text),
                NET_ERR_TOO_LARGE);
    expect_code("in game: NET_SetPlayerName(\"\")", NET_SetPlayerName(""),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_SetPlayerName(NULL)", NET_SetPlayerName(NULL),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_GetPlayerState(own slot, NULL)", NET_GetPlayerState(0, NULL),
                NET_ERR_INVALID_ARGUMENT);
    expect_code("in game: NET_PollEvent(NULL)", NET_PollEvent(NULL), NET_ERR_INVALID_ARGUMENT);
}

/* ----- the game ------------------------------------------------------------------------------- */

struct other {
    int32_t slot;
    char name[32];
    int joined;
    int finished; /* its "finished" text arrived */
    struct script script;
    int next;          /* next reliable event of its script */
    int got_name;      /* its PLAYER_NAME arrived */
    int unreliable[SCRIPT_MAX];
    int done;
};

struct game {
    const char *name;
    int32_t slot;
    struct other others[OTHERS];
    int count;
    struct script mine;
    int sent;
    int finished_sent;
};

static int name_in_place;

static struct other *other_at(struct game *g, int32_t slot)
{
    int i;

    for (i = 0; i < g->count; i++) {
        if (g->others[i].slot == slot) {
            return &g->others[i];
        }
    }
    return NULL;
}

static void frame(void)
{
    NETs_MaintainNet();
    check_sleep_ms(5);
}

static void check_name(struct other *o, const char *when)
{
    const char *name = NET_FetchPlayerName(o->slot);
    char what[160], why[120];

    snprintf(what, sizeof what, "NET_FetchPlayerName(%d) %s is \"%s\"", (int)o->slot, when,
             o->script.new_name);
    snprintf(why, sizeof why, "\"%s\"", name != NULL ? name : "(NULL)");
    expect_true(what, name != NULL && strcmp(name, o->script.new_name) == 0, why);
}

static void check_done(struct other *o)
{
    NET_ShipState state;
    int32_t rc;
    char what[120];

    if (o->done || o->next < o->script.count || !o->got_name) {
        return;
    }
    rc = NET_GetPlayerState(o->slot, &state);
    snprintf(what, sizeof what, "NET_GetPlayerState(%d) is exactly the state it set",
             (int)o->slot);
    expect_true(what, rc == NET_OK && memcmp(&state, &o->script.state, sizeof state) == 0, "");
    o->done = 1;
}

/* The next reliable event expected from `o`, skipping unreliable ones (and the PLAYER_NAME
 * unless --name-in-place: it is checked where it comes). */
static const NET_Event *next_reliable(struct other *o)
{
    while (o->next < o->script.count) {
        const NET_Event *want = &o->script.events[o->next];

        if (is_unreliable(want) ||
            (want->type == NET_EVENT_PLAYER_NAME && (o->got_name || !name_in_place))) {
            o->next++;
            continue;
        }
        return want;
    }
    return NULL;
}

static void handle_remote(struct other *o, const NET_Event *e)
{
    char what[200], why[200];
    const NET_Event *want;
    int i;

    if (e->type == NET_EVENT_TEXT && strcmp(e->text, "finished") == 0) {
        expect_true("\"finished\" comes after the whole script", o->done, "");
        o->finished = 1;
        return;
    }
    if (is_unreliable(e)) {
        for (i = 0; i < o->script.count; i++) {
            const NET_Event *w = &o->script.events[i];

            if (is_unreliable(w) && w->custom_type == e->custom_type) {
                snprintf(what, sizeof what, "unreliable CUSTOM (%u bytes) from slot %d",
                         (unsigned)w->data_len, (int)o->slot);
                expect_true(what, check_same_event(e, w, why, sizeof why), why);
                snprintf(what, sizeof what, "unreliable CUSTOM (%u bytes) at most once",
                         (unsigned)w->data_len);
                expect_true(what, o->unreliable[i]++ == 0, "");
                return;
            }
        }
        expect_true("an unreliable CUSTOM that was sent", 0, "");
        return;
    }
    if (e->type == NET_EVENT_PLAYER_NAME && !name_in_place) {
        /* Through a server: not after its place (the events queued after it come after it). */
        want = &o->script.events[o->script.name_index];
        snprintf(what, sizeof what, "PLAYER_NAME from slot %d, once", (int)o->slot);
        expect_true(what, !o->got_name, "");
        snprintf(what, sizeof what, "PLAYER_NAME from slot %d: every field", (int)o->slot);
        expect_true(what, check_same_event(e, want, why, sizeof why), why);
        snprintf(what, sizeof what, "PLAYER_NAME from slot %d not after its place", (int)o->slot);
        snprintf(why, sizeof why, "came after event #%d", o->next - 1);
        expect_true(what, o->next <= o->script.name_index, why);
        o->got_name = 1;
        check_name(o, "after its PLAYER_NAME");
        check_done(o);
        return;
    }
    want = next_reliable(o);
    if (want == NULL) {
        snprintf(why, sizeof why, "%s", check_event_name(e->type));
        expect_true("no event after a player's last one", 0, why);
        return;
    }
    snprintf(what, sizeof what, "from slot %d, event #%d %s, in order", (int)o->slot, o->next,
             check_event_name(want->type));
    expect_true(what, check_same_event(e, want, why, sizeof why), why);
    o->next++;
    if (o->next - 1 > o->script.name_index && !o->got_name) {
        snprintf(what, sizeof what,
                 "slot %d: event #%d %s comes after the PLAYER_NAME queued before it",
                 (int)o->slot, o->next - 1, check_event_name(want->type));
        expect_true(what, 0, "PLAYER_NAME not polled yet");
    }
    switch (want->type) {
    case NET_EVENT_CREATE_OBJECT: {
        int32_t owner = NET_FetchOwner(want->object_id);

        /* killed in the same frame: the lookups answer as of the frame, so -1 is allowed */
        snprintf(why, sizeof why, "%d (want %d or -1)", (int)owner, (int)o->slot);
        expect_true("NET_FetchOwner of a created object", owner == o->slot || owner == -1, why);
        break;
    }
    case NET_EVENT_CREATE_LASER:
    case NET_EVENT_CREATE_MISSILE:
    case NET_EVENT_CREATE_EXTRA: {
        int32_t owner = NET_FetchOwner(want->object_id);

        snprintf(what, sizeof what, "NET_FetchOwner(%#x) after its %s", (unsigned)want->object_id,
                 check_event_name(want->type));
        snprintf(why, sizeof why, "%d (want %d)", (int)owner, (int)o->slot);
        expect_true(what, owner == o->slot, why);
        break;
    }
    case NET_EVENT_KILL_OBJECT: {
        int32_t owner = NET_FetchOwner(want->object_id);

        snprintf(why, sizeof why, "%d", (int)owner);
        expect_true("NET_FetchOwner after the kill is -1", owner == -1, why);
        break;
    }
    case NET_EVENT_PLAYER_NAME:
        o->got_name = 1;
        check_name(o, "after its PLAYER_NAME");
        break;
    case NET_EVENT_TEXT:
        if (o->got_name) {
            check_name(o, "while handling a later text");
        }
        break;
    default:
        break;
    }
    check_done(o);
}

static void handle(struct game *g, const NET_Event *e)
{
    struct other *o;
    char why[200];

    print_event(e);
    switch (e->type) {
    case NET_EVENT_CONNECTED:
        g->slot = e->player_id;
        make_script(&g->mine, g->slot, g->name);
        return;
    case NET_EVENT_PLAYER_CONNECTED:
        expect_true("PLAYER_CONNECTED: at most two others", g->count < OTHERS, e->text);
        if (g->count < OTHERS) {
            o = &g->others[g->count++];
            memset(o, 0, sizeof *o);
            o->slot = e->player_id;
            snprintf(o->name, sizeof o->name, "%.31s", e->text);
            make_script(&o->script, o->slot, o->name);
        }
        return;
    case NET_EVENT_PLAYER_JOINED:
        if ((o = other_at(g, e->player_id)) != NULL) {
            o->joined = 1;
        }
        return;
    case NET_EVENT_PLAYER_UNJOINED:
    case NET_EVENT_DISCONNECTED:
        return;
    case NET_EVENT_PLAYER_DISCONNECTED:
        o = other_at(g, e->player_id);
        expect_true("a player leaves only after it finished", o != NULL && o->finished, e->text);
        return;
    case NET_EVENT_ERROR:
        expect_true("no ERROR event", 0, e->text);
        return;
    default:
        break;
    }
    if (e->type == NET_EVENT_TEXT && e->player_id == -1) {
        return; /* a server's message line */
    }
    o = other_at(g, e->player_id);
    if (o == NULL) {
        snprintf(why, sizeof why, "player_id %d", (int)e->player_id);
        expect_true("a remote event comes from a seated player's slot", 0, why);
        return;
    }
    handle_remote(o, e);
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

static int all(struct game *g, int what)
{
    int i;

    if (g->count < OTHERS) {
        return 0;
    }
    for (i = 0; i < g->count; i++) {
        const struct other *o = &g->others[i];

        if (!(what == 0 ? o->joined : what == 1 ? o->done : o->finished)) {
            return 0;
        }
    }
    return 1;
}

static void final_checks(struct game *g)
{
    NET_ShipState state;
    char what[160], why[160], view[1024];
    int32_t id;
    int i;
    size_t at = 0;

    expect_code("NET_GetPlayerState(own slot)", NET_GetPlayerState(g->slot, &state), NET_OK);
    expect_true("the own slot's state is the one set",
                memcmp(&state, &g->mine.state, sizeof state) == 0, "");
    for (id = -1; id <= 16; id++) {
        int seated = id == g->slot || other_at(g, id) != NULL;

        if (seated) {
            continue;
        }
        snprintf(what, sizeof what, "NET_GetPlayerState(unknown id %d)", (int)id);
        expect_code(what, NET_GetPlayerState(id, &state), NET_ERR_INVALID_ARGUMENT);
        snprintf(what, sizeof what, "NET_FetchPlayerName(unknown id %d) is NULL", (int)id);
        expect_true(what, NET_FetchPlayerName(id) == NULL, "");
    }
    expect_code("NET_GetPlayerState(1000)", NET_GetPlayerState(1000, &state),
                NET_ERR_INVALID_ARGUMENT);
    for (i = 0; i < g->count; i++) {
        struct other *o = &g->others[i];
        uint32_t k;

        check_name(o, "at the end");
        for (k = 2; k <= 4; k++) {
            int32_t owner = NET_FetchOwner(object_base(o->slot) + k);

            snprintf(what, sizeof what, "at the end NET_FetchOwner(%#x)",
                     (unsigned)(object_base(o->slot) + k));
            snprintf(why, sizeof why, "%d (want %d)", (int)owner, (int)o->slot);
            expect_true(what, owner == o->slot, why);
        }
        snprintf(what, sizeof what, "at the end NET_FetchOwner(killed %#x) is -1",
                 (unsigned)(object_base(o->slot) + 1));
        expect_true(what, NET_FetchOwner(object_base(o->slot) + 1) == -1, "");
    }
    {
        const char *own = NET_FetchPlayerName(g->slot);

        snprintf(why, sizeof why, "\"%s\"", own != NULL ? own : "(NULL)");
        expect_true("NET_FetchPlayerName(own slot) is the new name",
                    own != NULL && strcmp(own, g->mine.new_name) == 0, why);
    }
    for (i = 0; i < 3; i++) {
        snprintf(what, sizeof what, "the position callback was asked for fired object #%d", i);
        snprintf(why, sizeof why, "%d times", fired_objects[i].asked);
        expect_true(what, fired_objects[i].asked > 0, why);
    }
    for (id = 0; id < 16; id++) {
        const char *name = NET_FetchPlayerName(id);

        if (name != NULL && at < sizeof view) {
            at += (size_t)snprintf(view + at, sizeof view - at, " %d=%s", (int)id, name);
        }
    }
    printf("VIEW%s\n", view);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static struct game g;
    struct check_game_args args = {NULL, NULL, {NULL}, 0, 40000};
    int i;
    long duration;
    long long deadline, linger = 0;
    char name31[32];

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--name-in-place") == 0) {
            name_in_place = 1;
        } else if (!check_game_arg(&args, argc, argv, &i)) {
            fprintf(stderr, "usage: three_games --name NAME --peer HOST:PORT [--exec LINE]... "
                            "[--name-in-place] [--duration MS]\n");
            return 2;
        }
    }
    if (!check_game_args_given(&args, "three_games")) {
        return 2;
    }
    g.name = args.name;
    duration = args.duration;
    g.slot = -1;
    check_init_with_execs(&args);
    memset(name31, 'z', sizeof name31);
    name31[31] = '\0';
    expect_code("NET_SetPlayerName(31 bytes)", NET_SetPlayerName(name31), NET_OK);
    expect_code("NET_SetPlayerName", NET_SetPlayerName(g.name), NET_OK);
    expect_code("NET_SetObjectPositionCallback", NET_SetObjectPositionCallback(object_position, NULL),
                NET_OK);
    check_connect(args.peer);

    deadline = check_now_ms() + duration;
    while (check_now_ms() < deadline) {
        frame();
        poll_all(&g);
        if (g.slot >= 0 && NETs_Join() != NET_OK) {
            expect_code("NETs_Join", NET_ERR_STATE, NET_OK);
        }
        if (!g.sent && g.slot >= 0 && all(&g, 0)) {
            expect_code("NET_SetLocalState", NET_SetLocalState(&g.mine.state), NET_OK);
            frame();
            refused_calls();
            send_script(&g.mine);
            g.sent = 1;
        }
        if (g.sent && !g.finished_sent && all(&g, 1)) {
            expect_code("NET_RmEvSendText(\"finished\")", NET_RmEvSendText("finished"), NET_OK);
            g.finished_sent = 1;
        }
        if (g.finished_sent && all(&g, 2)) {
            if (linger == 0) {
                /* the others stay until they have this player's "finished" too */
                final_checks(&g);
                linger = check_now_ms() + 1500;
            } else if (check_now_ms() >= linger) {
                break;
            }
        }
    }
    expect_true("every other player's whole script arrived in time", all(&g, 1), "");
    expect_true("every other player finished", all(&g, 2), "");
    if (linger == 0) {
        final_checks(&g);
    }
    NET_Shutdown();
    return check_finish("three_games");
}
