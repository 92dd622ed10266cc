/*
 * rejoin_pair.c: one of two games (tests/rejoin_pair.rs) that check, as a test written only
 * against SPEC sections 4 and 8 and docs/c-api.md would, what the other sees when a player
 * leaves and joins again, renames itself and changes its ship state bit by bit, and that a game
 * shut down with NET_Shutdown in the middle of play can NET_Init and play again on the same port.
 * The "actor" acts, the "watcher" checks; each round:
 *
 *   - both NET_Init, set up loopback on their fixed port, connect to the other, NETs_Join, and
 *     wait for the other's PLAYER_JOINED;
 *   - the actor: NETs_Unjoin(0), NETs_Join(), NETs_Unjoin(7), a second NETs_Unjoin(3) (refused:
 *     NET_ERR_STATE), NETs_Join(), NETs_Join() again (NET_OK, changes nothing), NETs_Unjoin(255),
 *     NETs_Join(), one call per frame; then NET_SetPlayerName + NETs_UpdateName (twice; the
 *     second changes nothing); then three ship states, each followed by a chat line naming it:
 *     S1 with pos[0] = +0.0, S2 = S1 with pos[0] = -0.0 (equal as floats, not as bits), S3 = S2
 *     with one bit of the game area flipped; every field holds an extreme value (denormals,
 *     FLT_MAX, negative zero); peer to peer the actor sets the next state only once the
 *     watcher answered "seen Sn" for the last (NET_GetPlayerState answers as of the last
 *     NETs_MaintainNet, docs/c-api.md: a watcher that runs late would otherwise read the next
 *     state, already received with the chat line, while it handles "state Sn");
 *   - the watcher: sees exactly PLAYER_JOINED, PLAYER_UNJOINED (list_id 0), PLAYER_JOINED,
 *     PLAYER_UNJOINED (7), PLAYER_JOINED, PLAYER_UNJOINED (255), PLAYER_JOINED, PLAYER_NAME (the
 *     new name, once) from the actor's slot, and on each state's chat line NET_GetPlayerState of
 *     the actor is that state bit for bit; it answers "seen";
 *   - the actor calls NET_Shutdown while still in the game; the watcher must get
 *     PLAYER_DISCONNECTED for it, then shuts down too.
 * Round 2 does it all again in the same processes, on the same ports.
 *
 * Usage: rejoin_pair --role actor|watcher --port PORT --peer HOST:PORT [--rounds N]
 *                    [--exec LINE]... [--same-frame] [--near-states] [--server-order]
 *                    [--watcher-frame-ms N]
 *   --exec LINE    a console line run after the loopback setup (net.subsys gameserver; --peer
 *                  is then the server's address)
 *   --same-frame   the actor's unjoins, joins and rename all in one frame
 *   --near-states  the actor's ship stays within a gameserver's default --distance
 *   --watcher-frame-ms N  the watcher sleeps N ms a frame (5 by default), as a game on a loaded
 *                  machine runs late: the actor sends several packets between its frames
 *   --server-order the name may come anywhere among the actor's events, and a state may be
 *                  overtaken by a later one (through a server; the last must arrive exactly);
 *                  names a server cannot carry as set (not ASCII, a space at an end) are
 *                  refused by connect, NETs_UpdateName and NET_RmEvPlayerName
 * Prints one ok/FAIL line per check, every polled event as an "EVENT" line, and
 * "rejoin_pair: N checks, M failed".
 */

#define _POSIX_C_SOURCE 200809L

#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define ROUND_MS 30000
#define MAX_EXECS 8

/* --exec LINE: console lines run after the loopback setup (e.g. net.subsys gameserver). */
static const char *execs[MAX_EXECS];
static int exec_count;
/* --near-states: the actor's ship stays within 10000 units of the origin (through a gameserver). */
static int near_states;
/* --server-order: through a slot or game server, where the PLAYER_NAME comes once the server
 * accepted the name (not ordered with the events around it, docs/c-api.md) and states travel apart
 * from the events (latest wins): the name may come anywhere among the actor's events, and the
 * state seen after "state Sn" may already be a later one; the last must arrive exactly. */
static int server_order;
/* --same-frame: the actor's unjoins and joins all in one frame (no NETs_MaintainNet between). */
static int same_frame;
/* --watcher-frame-ms: the watcher's sleep per frame (the actor's is always 5 ms). */
static int watcher_frame_ms = 5;

struct game {
    int actor;
    int round;
    int32_t slot;
    int32_t other;
    int other_joined;
    int other_left;
    int saw_seen;              /* actor: the watcher's "seen" */
    int states_acked;          /* actor: the watcher's "seen Sn" (peer to peer) */
    char history[512];         /* watcher: the actor's JOINED/UNJOINED/NAME events, in order */
    int states_checked;        /* watcher: S1..S3 checked */
    int states_announced;      /* watcher (--server-order): "state Sn" lines seen */
    NET_ShipState states[3];   /* the actor's S1..S3 (both know them) */
    char new_name[32];
    char other_name[32];       /* the other's name in this round */
};

static void make_states(NET_ShipState states[3], int round)
{
    int i;

    memset(&states[0], 0, sizeof states[0]);
    states[0].pos[0] = 0.0f;
    states[0].pos[1] = 1.0e-45f;         /* the smallest denormal */
    /* A gameserver forwards states only between ships within its --distance (10000 by default):
     * the watcher stays at the origin, so through one the actor's ship keeps near it. */
    states[0].pos[2] = near_states ? 9999.5f : FLT_MAX;
    states[0].orient[0] = -0.0f;
    states[0].orient[1] = -1.0f;
    states[0].orient[2] = FLT_MIN;
    states[0].orient[3] = 0.5f;
    states[0].vel[0] = -FLT_MAX;
    states[0].vel[1] = -1.0e-45f;
    states[0].vel[2] = 3.0f + (float)round;
    for (i = 0; i < NET_SHIP_GAME_AREA; i++) {
        states[0].game[i] = (uint8_t)(i * 37 + round);
    }
    states[1] = states[0];
    states[1].pos[0] = -0.0f;            /* == +0.0 as a float, another bit pattern */
    states[2] = states[1];
    states[2].game[NET_SHIP_GAME_AREA - 1] ^= 0x01;
}

static void print_event(const NET_Event *e)
{
    printf("EVENT %s player=%d list=%u text=\"%s\"\n", check_event_name(e->type),
           (int)e->player_id, (unsigned)e->list_id, e->text);
    fflush(stdout);
}

static void append(char *history, size_t cap, const char *what)
{
    size_t used = strlen(history);

    snprintf(history + used, cap - used, "%s%s", used > 0 ? " " : "", what);
}

/* The index of the actor's state S1..S3 (0-2) the watcher sees now, or -1. */
static int state_seen(struct game *g)
{
    NET_ShipState got;
    int i;

    if (NET_GetPlayerState(g->other, &got) != NET_OK) {
        return -1;
    }
    for (i = 0; i < 3; i++) {
        if (memcmp(&got, &g->states[i], sizeof got) == 0) {
            return i;
        }
    }
    return -1;
}

static void check_state(struct game *g, int index)
{
    NET_ShipState got;
    char what[120], detail[200];
    int32_t rc;
    size_t i, first = sizeof got;

    memset(&got, 0xEE, sizeof got);
    rc = NET_GetPlayerState(g->other, &got);
    for (i = 0; i < sizeof got; i++) {
        if (((const unsigned char *)&got)[i] != ((const unsigned char *)&g->states[index])[i]) {
            first = i;
            break;
        }
    }
    snprintf(what, sizeof what, "round %d: the actor's state S%d arrives bit for bit", g->round,
             index + 1);
    snprintf(detail, sizeof detail, "NET_GetPlayerState returned %d; first differing byte %d of %d",
             (int)rc, first == sizeof got ? -1 : (int)first, (int)sizeof got);
    expect_true(what, rc == NET_OK && first == sizeof got, detail);
}

static void handle(struct game *g, const NET_Event *e)
{
    char item[64];

    print_event(e);
    switch (e->type) {
    case NET_EVENT_CONNECTED:
        g->slot = e->player_id;
        return;
    case NET_EVENT_PLAYER_CONNECTED:
        /* Only the other's incarnation of this round counts: the actor, back after its
         * NET_Shutdown, may reach the watcher's game of the round before (a new player there,
         * ignored) and later find the watcher of this round. */
        if (e->player_id != g->slot && g->other < 0 && strcmp(e->text, g->other_name) == 0) {
            g->other = e->player_id;
        }
        return;
    case NET_EVENT_PLAYER_DISCONNECTED:
        if (e->player_id == g->other) {
            g->other_left = 1;
            g->other = -1;
        }
        return;
    case NET_EVENT_ERROR:
        expect_true("no ERROR event", 0, e->text);
        return;
    default:
        break;
    }
    if (e->player_id != g->other || g->other < 0) {
        return;
    }
    switch (e->type) {
    case NET_EVENT_PLAYER_JOINED:
        g->other_joined = 1;
        append(g->history, sizeof g->history, "J");
        break;
    case NET_EVENT_PLAYER_UNJOINED:
        snprintf(item, sizeof item, "U%u", (unsigned)e->list_id);
        append(g->history, sizeof g->history, item);
        break;
    case NET_EVENT_PLAYER_NAME:
        snprintf(item, sizeof item, "N(%.40s)", e->text);
        append(g->history, sizeof g->history, item);
        break;
    case NET_EVENT_TEXT:
        if (g->actor) {
            if (strcmp(e->text, "seen") == 0) {
                g->saw_seen = 1;
            } else if (strncmp(e->text, "seen S", 6) == 0) {
                int index = e->text[6] - '1';

                if (index >= 0 && index < 3) {
                    g->states_acked |= 1 << index;
                }
            }
        } else if (strncmp(e->text, "state S", 7) == 0) {
            int index = e->text[7] - '1';

            if (index >= 0 && index < 3 && !server_order) {
                char seen[16];

                check_state(g, index);
                g->states_checked |= 1 << index;
                snprintf(seen, sizeof seen, "seen S%d", index + 1);
                expect_code("NET_RmEvSendText(\"seen Sn\")", NET_RmEvSendText(seen), NET_OK);
            } else if (index >= 0 && index < 3) {
                g->states_announced |= 1 << index;
            }
        }
        break;
    default:
        break;
    }
}

static void frame(struct game *g)
{
    NET_Event e;
    int32_t rc;

    NETs_MaintainNet();
    while ((rc = NET_PollEvent(&e)) == 1) {
        handle(g, &e);
    }
    if (rc != 0) {
        expect_code("NET_PollEvent", rc, 0);
    }
    check_sleep_ms(g->actor ? 5 : watcher_frame_ms);
}

/* Run frames until `*flag` is set or `deadline`; 1 if it was set. */
static int frames_until(struct game *g, const int *flag, long long deadline)
{
    while (!*flag && check_now_ms() < deadline) {
        frame(g);
    }
    return *flag;
}

static void act(struct game *g, long long deadline)
{
    char what[120];
    int i;

#define STEP(call, want)                                                                       \
    do {                                                                                       \
        snprintf(what, sizeof what, "round %d: %s", g->round, #call);                          \
        expect_code(what, (call), (want));                                                     \
        if (!same_frame) {                                                                     \
            frame(g);                                                                          \
        }                                                                                      \
    } while (0)
    STEP(NETs_Unjoin(0), NET_OK);
    STEP(NETs_Join(), NET_OK);
    STEP(NETs_Unjoin(7), NET_OK);
    STEP(NETs_Unjoin(3) /* not joined */, NET_ERR_STATE);
    STEP(NETs_Join(), NET_OK);
    STEP(NETs_Join() /* joined already */, NET_OK);
    STEP(NETs_Unjoin(255), NET_OK);
    STEP(NETs_Join(), NET_OK);
    if (server_order) {
        /* Names a server cannot carry as they are (not ASCII; spaces at an end, which its text
         * protocol drops): refused at once, saying so, and the name in use stays. Asked anyway
         * they were lost without a word (no PLAYER_NAME, no ERROR event). */
        static const char *const unusable[] = {"J\xc3\xbcrgen", " spaced", "spaced "};
        char kept[32];
        size_t k;

        snprintf(kept, sizeof kept, "actor-r%d", g->round);
        for (k = 0; k < sizeof unusable / sizeof unusable[0]; k++) {
            const char *name;

            snprintf(what, sizeof what, "round %d: NET_SetPlayerName(\"%s\") + NETs_UpdateName()",
                     g->round, unusable[k]);
            expect_code("NET_SetPlayerName (a name a server cannot carry)",
                        NET_SetPlayerName(unusable[k]), NET_OK);
            expect_error_mentioning(what, NETs_UpdateName(), NET_ERR_INVALID_ARGUMENT,
                                    "cannot be used on a");
            name = NET_FetchPlayerName(g->slot);
            expect_true("after the refused rename the own name is the one in use",
                        name != NULL && strcmp(name, kept) == 0, name != NULL ? name : "(NULL)");
            snprintf(what, sizeof what, "round %d: NET_RmEvPlayerName(\"%s\")", g->round,
                     unusable[k]);
            expect_error_mentioning(what, NET_RmEvPlayerName(unusable[k]),
                                    NET_ERR_INVALID_ARGUMENT, "cannot be used on a");
            name = NET_FetchPlayerName(g->slot);
            expect_true("after the refused NET_RmEvPlayerName the own name is the one in use",
                        name != NULL && strcmp(name, kept) == 0, name != NULL ? name : "(NULL)");
            frame(g);
        }
    }
    STEP(NET_SetPlayerName(g->new_name), NET_OK);
    STEP(NETs_UpdateName(), NET_OK);
    STEP(NETs_UpdateName() /* the same name again */, NET_OK);
#undef STEP
    for (i = 0; i < 3; i++) {
        char text[16];
        int k;

        snprintf(what, sizeof what, "round %d: NET_SetLocalState(S%d)", g->round, i + 1);
        expect_code(what, NET_SetLocalState(&g->states[i]), NET_OK);
        for (k = 0; k < 3; k++) {
            frame(g);
        }
        snprintf(text, sizeof text, "state S%d", i + 1);
        snprintf(what, sizeof what, "round %d: NET_RmEvSendText(\"%s\")", g->round, text);
        expect_code(what, NET_RmEvSendText(text), NET_OK);
        frame(g);
        if (!server_order) {
            while (!(g->states_acked & (1 << i)) && check_now_ms() < deadline) {
                frame(g);
            }
            snprintf(what, sizeof what, "round %d: the watcher answered \"seen S%d\"", g->round,
                     i + 1);
            expect_true(what, (g->states_acked & (1 << i)) != 0, "");
        }
    }
    snprintf(what, sizeof what, "round %d: the watcher says it saw everything", g->round);
    expect_true(what, frames_until(g, &g->saw_seen, deadline), "");
}

static void watch(struct game *g, long long deadline)
{
    char what[160], want[200];
    int all = 7;

    while (g->states_checked != all && check_now_ms() < deadline) {
        frame(g);
        if (server_order && g->states_announced != 0) {
            /* Announced states count as seen once the watcher sees that state or a later one;
             * S3 must be seen itself. */
            int seen = state_seen(g), i;

            for (i = 0; i <= seen; i++) {
                if (g->states_announced & (1 << i)) {
                    g->states_checked |= 1 << i;
                }
            }
        }
    }
    snprintf(what, sizeof what, "round %d: the actor's three states arrived", g->round);
    expect_true(what, g->states_checked == all, "");
    snprintf(want, sizeof want, "J U0 J U7 J U255 J N(%s)", g->new_name);
    if (server_order) {
        /* The name once, anywhere: take it out and compare the rest. */
        char name_item[64], *at;

        snprintf(name_item, sizeof name_item, "N(%s)", g->new_name);
        at = strstr(g->history, name_item);
        if (at != NULL && strstr(at + 1, name_item) == NULL) {
            size_t len = strlen(name_item) + (at[strlen(name_item)] == ' ' ? 1 : 0);

            memmove(at, at + len, strlen(at + len) + 1);
            if (strlen(g->history) > 0 && g->history[strlen(g->history) - 1] == ' ') {
                g->history[strlen(g->history) - 1] = '\0';
            }
            append(g->history, sizeof g->history, name_item);
        }
    }
    snprintf(what, sizeof what,
             "round %d: the actor's JOINED/UNJOINED/NAME events, each once with its flag",
             g->round);
    {
        char detail[800];

        snprintf(detail, sizeof detail, "got \"%s\", want \"%s\"", g->history, want);
        expect_true(what, strcmp(g->history, want) == 0, detail);
    }
    {
        const char *name = NET_FetchPlayerName(g->other);

        snprintf(what, sizeof what, "round %d: NET_FetchPlayerName(actor) is its new name",
                 g->round);
        expect_true(what, name != NULL && strcmp(name, g->new_name) == 0,
                    name != NULL ? name : "(NULL)");
    }
    snprintf(what, sizeof what, "round %d: NET_RmEvSendText(\"seen\")", g->round);
    expect_code(what, NET_RmEvSendText("seen"), NET_OK);
    snprintf(what, sizeof what,
             "round %d: the actor's NET_Shutdown in the game arrives as PLAYER_DISCONNECTED",
             g->round);
    expect_true(what, frames_until(g, &g->other_left, deadline), "");
}

static int play_round(int actor, int round, int port, const char *peer)
{
    static struct game g;
    char line[200], out[1024], what[400];
    long long deadline = check_now_ms() + ROUND_MS;
    int32_t rc;
    const char *setup[] = {"net.udp.bind 127.0.0.1", "net.udp.ipv6 0", NULL,
                           "net.peer.connect_interval 50", "net.peer.slot_interval 80",
                           "net.peer.reply_wait 30"};
    char port_line[40];
    size_t i;

    memset(&g, 0, sizeof g);
    g.actor = actor;
    g.round = round;
    g.slot = -1;
    g.other = -1;
    make_states(g.states, round);
    snprintf(g.new_name, sizeof g.new_name, "actor-renamed-r%d", round);
    snprintf(g.other_name, sizeof g.other_name, "%s-r%d", actor ? "watcher" : "actor", round);

    snprintf(what, sizeof what, "round %d: NET_Init()", round);
    expect_code(what, NET_Init(), NET_OK);
    snprintf(what, sizeof what, "round %d: NET_Init() again", round);
    expect_code(what, NET_Init(), NET_OK);
    snprintf(port_line, sizeof port_line, "net.port %d", port);
    setup[2] = port_line;
    for (i = 0; i < sizeof setup / sizeof setup[0]; i++) {
        rc = NET_ConsoleExec(setup[i], out, sizeof out);
        snprintf(what, sizeof what, "round %d: console \"%s\": %.100s", round, setup[i], out);
        expect_code(what, rc, NET_OK);
    }
    for (i = 0; i < (size_t)exec_count; i++) {
        rc = NET_ConsoleExec(execs[i], out, sizeof out);
        snprintf(what, sizeof what, "round %d: console \"%s\": %.100s", round, execs[i], out);
        expect_code(what, rc, NET_OK);
    }
    if (server_order) {
        /* A server would take " spaced " as "spaced": refused before connecting. */
        expect_code("NET_SetPlayerName(\" spaced \")", NET_SetPlayerName(" spaced "), NET_OK);
        snprintf(line, sizeof line, "connect %s", peer);
        rc = NET_ConsoleExec(line, out, sizeof out);
        snprintf(what, sizeof what, "round %d: %s as \" spaced \" is refused: %.150s", round,
                 line, out);
        expect_true(what,
                    rc == NET_ERR_INVALID_ARGUMENT && strstr(out, "cannot be used on a") != NULL,
                    "");
    }
    snprintf(line, sizeof line, "%s-r%d", actor ? "actor" : "watcher", round);
    expect_code("NET_SetPlayerName", NET_SetPlayerName(line), NET_OK);
    snprintf(line, sizeof line, "connect %s", peer);
    rc = NET_ConsoleExec(line, out, sizeof out);
    snprintf(what, sizeof what, "round %d: %s: %.100s", round, line, out);
    expect_code(what, rc, NET_OK);

    while (check_now_ms() < deadline && !(g.slot >= 0 && g.other >= 0 && g.other_joined)) {
        frame(&g);
        if (g.slot >= 0) {
            rc = NETs_Join();
            if (rc != NET_OK) {
                snprintf(what, sizeof what, "round %d: NETs_Join", round);
                expect_code(what, rc, NET_OK);
            }
        }
    }
    snprintf(what, sizeof what, "round %d: both in the game and joined (own slot %d, other %d)",
             round, (int)g.slot, (int)g.other);
    expect_true(what, g.slot >= 0 && g.other >= 0 && g.other_joined, "");
    if (!(g.slot >= 0 && g.other >= 0 && g.other_joined)) {
        NET_Shutdown();
        return 0;
    }
    if (actor) {
        act(&g, deadline);
    } else {
        watch(&g, deadline);
    }
    NET_Shutdown();
    return 1;
}

int main(int argc, char **argv)
{
    const char *role = NULL, *peer = NULL;
    int port = 0, rounds = 2, i, actor;

    for (i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--role") == 0) {
            role = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--port") == 0) {
            port = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--peer") == 0) {
            peer = argv[++i];
        } else if (i + 1 < argc && strcmp(argv[i], "--exec") == 0 && exec_count < MAX_EXECS) {
            execs[exec_count++] = argv[++i];
        } else if (strcmp(argv[i], "--server-order") == 0) {
            server_order = 1;
        } else if (strcmp(argv[i], "--near-states") == 0) {
            near_states = 1;
        } else if (strcmp(argv[i], "--same-frame") == 0) {
            same_frame = 1;
        } else if (i + 1 < argc && strcmp(argv[i], "--watcher-frame-ms") == 0) {
            watcher_frame_ms = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(argv[i], "--rounds") == 0) {
            rounds = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: rejoin_pair --role actor|watcher --port PORT --peer "
                            "HOST:PORT [--rounds N] [--exec LINE]... [--same-frame] [--near-states] [--server-order] [--watcher-frame-ms N]\n");
            return 2;
        }
    }
    if (role == NULL || peer == NULL || port < 0 ||
        (strcmp(role, "actor") != 0 && strcmp(role, "watcher") != 0)) {
        fprintf(stderr, "rejoin_pair: --role actor|watcher, --port and --peer are required\n");
        return 2;
    }
    actor = strcmp(role, "actor") == 0;
    for (i = 1; i <= rounds; i++) {
        if (!play_round(actor, i, port, peer)) {
            break;
        }
    }
    NET_Shutdown();
    expect_true("NET_Shutdown twice at the end returns", 1, "");
    return check_finish("rejoin_pair");
}
