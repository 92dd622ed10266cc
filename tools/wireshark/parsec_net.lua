--[[
parsec_net.lua: a Wireshark dissector for parsec-net game packets ("parsecnet").

parsec-net's game protocols (peer-to-peer, slotserver game traffic, gameserver) send one game
packet per UDP datagram: a 24-byte header starting with "PSN" and protocol version 1, an
optional 72-byte ship state and a run of remote events. The format is docs/wire-format.md; this
file decodes exactly that, field by field, big-endian.

Loading
  One run:    wireshark -X lua_script:tools/wireshark/parsec_net.lua capture.pcapng
              tshark -X lua_script:tools/wireshark/parsec_net.lua -r capture.pcapng -Y parsecnet
  For good:   copy this file into the personal Lua plugins folder (Help > About Wireshark >
              Folders > Personal Lua Plugins, e.g. ~/.local/lib/wireshark/plugins/) and restart.

Which datagrams
  - UDP ports 6526 (game client) and 6522 (gameserver UDP) are always tried (preference
    "parsecnet.udp_ports"); a datagram there that does not start with "PSN" is left to other
    dissectors (it is a raw datagram of the game's own, NETs_SendDatagram).
  - Any other UDP datagram is taken by the heuristic "parsecnet_udp" when it starts with "PSN"
    and protocol version 1 (Analyze > Enabled Protocols lists it; it can be switched off there).

Fields (display filter names)
  Header    parsecnet.signature, parsecnet.version, parsecnet.type (names: CONNECT ...
            CONNECT_REFUSED), parsecnet.slot (255 = no slot yet), parsecnet.flags,
            parsecnet.flags.state, parsecnet.flags.joined, parsecnet.flags.ack,
            parsecnet.flags.reserved, parsecnet.count (event count), parsecnet.seq,
            parsecnet.ack, parsecnet.ack_bits, parsecnet.acked (generated: every sequence the
            ack fields acknowledge), parsecnet.token
  State     parsecnet.state, parsecnet.state.pos (text "(x, y, z)") with
            parsecnet.state.pos.x/.y/.z, parsecnet.state.orient (+ .x/.y/.z/.w),
            parsecnet.state.vel (+ .x/.y/.z), parsecnet.state.game (the 32 opaque bytes)
  Events    parsecnet.event, parsecnet.event.type (names RE_CREATEOBJECT ... RE_RESUME),
            parsecnet.event.flags, parsecnet.event.reliable, parsecnet.event.flags.reserved,
            parsecnet.event.length (body length), parsecnet.event.id (reliable id),
            parsecnet.event.object_id, parsecnet.event.class, parsecnet.event.pos (+ .x/.y/.z),
            parsecnet.event.orient (+ .x/.y/.z/.w), parsecnet.event.dir (+ .x/.y/.z),
            parsecnet.event.object_flags, parsecnet.event.target_id,
            parsecnet.event.extra_index, parsecnet.event.list_id,
            parsecnet.event.particle_type, parsecnet.event.origin (+ .x/.y/.z),
            parsecnet.event.text, parsecnet.event.name, parsecnet.event.string_length,
            parsecnet.event.entry_count, parsecnet.event.custom_type,
            parsecnet.event.data_length, parsecnet.event.data, parsecnet.event.joined,
            parsecnet.event.unjoin_flag, parsecnet.event.body (an unknown event's body),
            parsecnet.event.extra_bytes (body bytes after the fields)
            RE_RESUME (type 13, stream resumption): parsecnet.event.resume_step (1 hello,
            2 answer, 3 done), parsecnet.event.token_count, parsecnet.event.earlier_token,
            parsecnet.event.your_token, parsecnet.event.my_token,
            parsecnet.event.delivered_id
            RE_RATE (type 14, the sender's receive rate): parsecnet.event.rate
            RE_VACATED (type 15, a gameserver's word that the slot's player left):
            parsecnet.event.told_id
  Entries   RE_PLAYERLIST: parsecnet.player, parsecnet.player.slot, parsecnet.player.flags,
            parsecnet.player.joined, parsecnet.player.flags.reserved, parsecnet.player.token,
            parsecnet.player.node, parsecnet.player.address (generated: the node read as a
            UDP backend node, "127.0.0.1:6526"), parsecnet.player.name
            RE_CONNECTQUEUE: parsecnet.request, parsecnet.request.token,
            parsecnet.request.node, parsecnet.request.address, parsecnet.request.name
  Other     parsecnet.trailing (bytes after the last event), parsecnet.undecoded (bytes after
            an unsupported protocol version)

Expert info (parsecnet.expert.*): truncated (a field or event runs past the end of the
datagram), length_mismatch (an event body length differs from what its fields take),
trailing (bytes after the last event), version (unsupported protocol version), unknown_type
(unknown packet or event type), reserved (reserved flag bits set), invalid (a value the
receiver rejects: zero sequence, token, id; bad slot, list id, count or resume step; duplicate
slot; too long or NUL-containing string; ack fields without their flag; an always-reliable
event sent unreliable), non_finite (a NaN or infinite float), internal (a bug in this dissector).
A receiver drops every packet with any of these but the last (docs/wire-format.md,
"Validation"); this dissector still shows every field it can, and bad input never makes it
stop with a Lua error.

The Info column reads e.g. GAME_STATE slot 1 seq 42 ack 40: RE_SENDTEXT "hello".
--]]

local parsecnet = Proto("parsecnet", "Parsec Net Game Protocol")

---------------------------------------------------------------------------------------------
-- Constants of docs/wire-format.md
---------------------------------------------------------------------------------------------

local SIGNATURE = "PSN"
local PROTOCOL_VERSION = 1
local NO_SLOT = 255
local MAX_SLOTS = 16
local MAX_NAME_LEN = 31
local MAX_TEXT_LEN = 255
local MAX_CUSTOM_DATA = 256
local MAX_LIST_ID = 15
local NODE_LEN = 32
local GAME_AREA_LEN = 32
local DEFAULT_PORTS = "6522,6526"

local packet_types = {
    [1] = "CONNECT",
    [2] = "CONNECT_REPLY",
    [3] = "DISCONNECT",
    [4] = "SLOT_REQUEST",
    [5] = "SUBDUE_SLAVE",
    [6] = "JOIN",
    [7] = "UNJOIN",
    [8] = "GAME_STATE",
    [9] = "NODE_ALIVE",
    [10] = "CONNECT_REFUSED",
}

local RE_CREATEOBJECT, RE_CREATELASER, RE_CREATEMISSILE, RE_CREATEEXTRA = 1, 2, 3, 4
local RE_KILLOBJECT, RE_SENDTEXT, RE_PLAYERNAME, RE_PARTICLEOBJECT = 5, 6, 7, 8
local RE_PLAYERLIST, RE_CONNECTQUEUE, RE_CUSTOM, RE_PLAYERSTATUS = 9, 10, 11, 12
local RE_RESUME, RE_RATE, RE_VACATED = 13, 14, 15

local event_types = {
    [RE_CREATEOBJECT] = "RE_CREATEOBJECT",
    [RE_CREATELASER] = "RE_CREATELASER",
    [RE_CREATEMISSILE] = "RE_CREATEMISSILE",
    [RE_CREATEEXTRA] = "RE_CREATEEXTRA",
    [RE_KILLOBJECT] = "RE_KILLOBJECT",
    [RE_SENDTEXT] = "RE_SENDTEXT",
    [RE_PLAYERNAME] = "RE_PLAYERNAME",
    [RE_PARTICLEOBJECT] = "RE_PARTICLEOBJECT",
    [RE_PLAYERLIST] = "RE_PLAYERLIST",
    [RE_CONNECTQUEUE] = "RE_CONNECTQUEUE",
    [RE_CUSTOM] = "RE_CUSTOM",
    [RE_PLAYERSTATUS] = "RE_PLAYERSTATUS",
    [RE_RESUME] = "RE_RESUME",
    [RE_RATE] = "RE_RATE",
    [RE_VACATED] = "RE_VACATED",
}

-- Body sizes of the event types whose body has a fixed size.
local fixed_body_len = {
    [RE_CREATEOBJECT] = 38,
    [RE_CREATELASER] = 30,
    [RE_CREATEMISSILE] = 34,
    [RE_CREATEEXTRA] = 18,
    [RE_KILLOBJECT] = 5,
    [RE_PARTICLEOBJECT] = 14,
    [RE_PLAYERSTATUS] = 2,
    [RE_RATE] = 4,
    [RE_VACATED] = 4,
}

local joined_names = { [0] = "unjoined", [1] = "joined" }

-- RE_RESUME steps, and the most earlier tokens a hello lists.
local RESUME_HELLO, RESUME_ANSWER, RESUME_DONE = 1, 2, 3
local resume_steps = { [RESUME_HELLO] = "hello", [RESUME_ANSWER] = "answer", [RESUME_DONE] = "done" }
local MAX_EARLIER_TOKENS = 4

---------------------------------------------------------------------------------------------
-- Fields
---------------------------------------------------------------------------------------------

local F = {}

-- Header.
F.signature = ProtoField.string("parsecnet.signature", "Signature")
F.version = ProtoField.uint8("parsecnet.version", "Protocol version", base.DEC)
F.type = ProtoField.uint8("parsecnet.type", "Packet type", base.DEC, packet_types)
F.slot = ProtoField.uint8("parsecnet.slot", "Sender slot", base.DEC)
F.flags = ProtoField.uint8("parsecnet.flags", "Flags", base.HEX)
F.flag_state = ProtoField.bool("parsecnet.flags.state", "Ship state follows", 8, nil, 0x01)
F.flag_joined = ProtoField.bool("parsecnet.flags.joined", "Sender is joined", 8, nil, 0x02)
F.flag_ack = ProtoField.bool("parsecnet.flags.ack", "Ack fields valid", 8, nil, 0x04)
F.flag_reserved = ProtoField.uint8("parsecnet.flags.reserved", "Reserved", base.HEX, nil, 0xF8)
F.count = ProtoField.uint8("parsecnet.count", "Event count", base.DEC)
F.seq = ProtoField.uint32("parsecnet.seq", "Sequence", base.DEC)
F.ack = ProtoField.uint32("parsecnet.ack", "Ack", base.DEC)
F.ack_bits = ProtoField.uint32("parsecnet.ack_bits", "Ack bits", base.HEX)
F.acked = ProtoField.uint32("parsecnet.acked", "Acknowledged sequence", base.DEC)
F.token = ProtoField.uint32("parsecnet.token", "Session token", base.HEX)

-- A float vector: a text field "(x, y, z)" over all of it, with one float field per component.
local function vector_fields(abbrev, label, components)
    local v = { whole = ProtoField.string(abbrev, label), components = components }
    for _, c in ipairs(components) do
        v[c] = ProtoField.float(abbrev .. "." .. c, label .. " " .. c)
    end
    return v
end

local XYZ = { "x", "y", "z" }
local XYZW = { "x", "y", "z", "w" }

-- Ship state.
F.state = ProtoField.none("parsecnet.state", "Ship state")
local V_STATE_POS = vector_fields("parsecnet.state.pos", "Position", XYZ)
local V_STATE_ORIENT = vector_fields("parsecnet.state.orient", "Orientation", XYZW)
local V_STATE_VEL = vector_fields("parsecnet.state.vel", "Velocity", XYZ)
F.state_game = ProtoField.bytes("parsecnet.state.game", "Game area")

-- Remote events.
F.event = ProtoField.none("parsecnet.event", "Remote event")
F.ev_type = ProtoField.uint8("parsecnet.event.type", "Event type", base.DEC, event_types)
F.ev_flags = ProtoField.uint8("parsecnet.event.flags", "Event flags", base.HEX)
F.ev_reliable = ProtoField.bool("parsecnet.event.reliable", "Reliable", 8, nil, 0x01)
F.ev_flag_reserved =
    ProtoField.uint8("parsecnet.event.flags.reserved", "Reserved", base.HEX, nil, 0xFE)
F.ev_length = ProtoField.uint16("parsecnet.event.length", "Body length", base.DEC)
F.ev_id = ProtoField.uint32("parsecnet.event.id", "Reliable id", base.DEC)
F.ev_object_id = ProtoField.uint32("parsecnet.event.object_id", "Object id", base.DEC)
F.ev_class = ProtoField.uint16("parsecnet.event.class", "Object class", base.DEC)
local V_EV_POS = vector_fields("parsecnet.event.pos", "Position", XYZ)
local V_EV_ORIENT = vector_fields("parsecnet.event.orient", "Orientation", XYZW)
local V_EV_DIR = vector_fields("parsecnet.event.dir", "Direction", XYZ)
local V_EV_ORIGIN = vector_fields("parsecnet.event.origin", "Origin", XYZ)
F.ev_object_flags = ProtoField.uint32("parsecnet.event.object_flags", "Object flags", base.HEX)
F.ev_target_id = ProtoField.uint32("parsecnet.event.target_id", "Target id", base.DEC,
    { [0] = "no target" })
F.ev_extra_index = ProtoField.uint16("parsecnet.event.extra_index", "Extra index", base.DEC)
F.ev_list_id = ProtoField.uint8("parsecnet.event.list_id", "List id", base.DEC)
F.ev_particle_type =
    ProtoField.uint16("parsecnet.event.particle_type", "Particle type", base.DEC)
F.ev_string_length =
    ProtoField.uint8("parsecnet.event.string_length", "String length", base.DEC)
F.ev_text = ProtoField.string("parsecnet.event.text", "Text")
F.ev_name = ProtoField.string("parsecnet.event.name", "Name")
F.ev_entry_count = ProtoField.uint8("parsecnet.event.entry_count", "Entry count", base.DEC)
F.ev_custom_type = ProtoField.uint16("parsecnet.event.custom_type", "Custom type", base.DEC)
F.ev_data_length = ProtoField.uint16("parsecnet.event.data_length", "Data length", base.DEC)
F.ev_data = ProtoField.bytes("parsecnet.event.data", "Data")
F.ev_joined = ProtoField.uint8("parsecnet.event.joined", "Joined", base.DEC, joined_names)
F.ev_unjoin_flag = ProtoField.uint8("parsecnet.event.unjoin_flag", "Unjoin flag", base.DEC)
F.ev_rate = ProtoField.uint32("parsecnet.event.rate", "Receive rate (bytes/s, 0 unlimited)",
    base.DEC)
F.ev_told_id = ProtoField.uint32("parsecnet.event.told_id",
    "Told id of the player who left (0: whoever sat there)", base.HEX)
F.ev_resume_step =
    ProtoField.uint8("parsecnet.event.resume_step", "Resume step", base.DEC, resume_steps)
F.ev_token_count = ProtoField.uint8("parsecnet.event.token_count", "Token count", base.DEC)
F.ev_earlier_token =
    ProtoField.uint32("parsecnet.event.earlier_token", "Earlier token", base.HEX)
F.ev_your_token = ProtoField.uint32("parsecnet.event.your_token",
    "Receiver's token on the old link", base.HEX)
F.ev_my_token = ProtoField.uint32("parsecnet.event.my_token",
    "Sender's token on the old link", base.HEX)
F.ev_delivered_id =
    ProtoField.uint32("parsecnet.event.delivered_id", "Last delivered reliable id", base.DEC)
F.ev_body = ProtoField.bytes("parsecnet.event.body", "Body")
F.ev_extra_bytes = ProtoField.bytes("parsecnet.event.extra_bytes", "Bytes after the fields")

-- RE_PLAYERLIST entries.
F.player = ProtoField.none("parsecnet.player", "Player")
F.pl_slot = ProtoField.uint8("parsecnet.player.slot", "Slot", base.DEC)
F.pl_flags = ProtoField.uint8("parsecnet.player.flags", "Player flags", base.HEX)
F.pl_joined = ProtoField.bool("parsecnet.player.joined", "Joined", 8, nil, 0x01)
F.pl_flag_reserved =
    ProtoField.uint8("parsecnet.player.flags.reserved", "Reserved", base.HEX, nil, 0xFE)
F.pl_token = ProtoField.uint32("parsecnet.player.token", "Session token", base.HEX)
F.pl_node = ProtoField.bytes("parsecnet.player.node", "Node")
F.pl_address = ProtoField.string("parsecnet.player.address", "Address (as a UDP node)")
F.pl_name = ProtoField.string("parsecnet.player.name", "Name")

-- RE_CONNECTQUEUE entries.
F.request = ProtoField.none("parsecnet.request", "Connect request")
F.rq_token = ProtoField.uint32("parsecnet.request.token", "Session token", base.HEX)
F.rq_node = ProtoField.bytes("parsecnet.request.node", "Node")
F.rq_address = ProtoField.string("parsecnet.request.address", "Address (as a UDP node)")
F.rq_name = ProtoField.string("parsecnet.request.name", "Name")

-- Leftovers.
F.trailing = ProtoField.bytes("parsecnet.trailing", "Trailing bytes")
F.undecoded = ProtoField.bytes("parsecnet.undecoded", "Not decoded")

do
    local all = {}
    for _, field in pairs(F) do
        all[#all + 1] = field
    end
    for _, v in ipairs({ V_STATE_POS, V_STATE_ORIENT, V_STATE_VEL, V_EV_POS, V_EV_ORIENT,
        V_EV_DIR, V_EV_ORIGIN }) do
        all[#all + 1] = v.whole
        for _, c in ipairs(v.components) do
            all[#all + 1] = v[c]
        end
    end
    parsecnet.fields = all
end

---------------------------------------------------------------------------------------------
-- Expert info
---------------------------------------------------------------------------------------------

local E = {
    truncated = ProtoExpert.new("parsecnet.expert.truncated", "Truncated",
        expert.group.MALFORMED, expert.severity.ERROR),
    length_mismatch = ProtoExpert.new("parsecnet.expert.length_mismatch",
        "Event body length mismatch", expert.group.MALFORMED, expert.severity.WARN),
    trailing = ProtoExpert.new("parsecnet.expert.trailing", "Bytes after the last event",
        expert.group.MALFORMED, expert.severity.WARN),
    version = ProtoExpert.new("parsecnet.expert.version", "Unsupported protocol version",
        expert.group.PROTOCOL, expert.severity.WARN),
    unknown_type = ProtoExpert.new("parsecnet.expert.unknown_type", "Unknown type",
        expert.group.PROTOCOL, expert.severity.WARN),
    reserved = ProtoExpert.new("parsecnet.expert.reserved", "Reserved bits set",
        expert.group.PROTOCOL, expert.severity.WARN),
    invalid = ProtoExpert.new("parsecnet.expert.invalid", "Invalid value",
        expert.group.PROTOCOL, expert.severity.WARN),
    non_finite = ProtoExpert.new("parsecnet.expert.non_finite", "Non-finite float",
        expert.group.PROTOCOL, expert.severity.WARN),
    internal = ProtoExpert.new("parsecnet.expert.internal", "Dissector bug",
        expert.group.UNDECODED, expert.severity.ERROR),
}
parsecnet.experts = {
    E.truncated, E.length_mismatch, E.trailing, E.version, E.unknown_type, E.reserved,
    E.invalid, E.non_finite, E.internal,
}

---------------------------------------------------------------------------------------------
-- Helpers
---------------------------------------------------------------------------------------------

-- Whether bit `n` (0 = lowest) of `value` is set (plain arithmetic: no bit library needed).
local function bit_set(value, n)
    return math.floor(value / 2 ^ n) % 2 == 1
end

local function is_finite(x)
    return x == x and x ~= math.huge and x ~= -math.huge
end

-- A number as the Info column and vector texts show it.
local function num(x)
    return string.format("%g", x)
end

-- A string as the Info column shows it: control characters as '.', at most 40 bytes.
local function clean(s)
    s = s:gsub("%c", ".")
    if #s > 40 then
        s = s:sub(1, 37) .. "..."
    end
    return s
end

-- The same, in double quotes.
local function quote(s)
    return '"' .. clean(s) .. '"'
end

-- The dissection state of one packet: the tvb, its captured length, the root tree item, and
-- the first problem found (shown in the Info column).
local function new_context(tvb, root)
    return { tvb = tvb, len = tvb:len(), root = root, first_problem = nil }
end

-- Attach expert info `ex` with `text` to `item`; the first one also goes to the Info column.
local function problem(ctx, item, ex, text)
    item:add_proto_expert_info(ex, text)
    if not ctx.first_problem then
        ctx.first_problem = text
    end
end

-- A cursor over the bytes [pos, limit) of the packet. `short` says what running out of bytes
-- means there: "truncated" (the datagram ends) or "mismatch" (an event body is shorter than
-- its fields). `failed` is set once a field did not fit; nothing is read after that.
local function cursor(pos, limit, short)
    return { pos = pos, limit = limit, short = short, failed = false }
end

-- The next `n` bytes as a TvbRange, or nil after reporting on `tree` that `what` does not fit.
local function take(ctx, cur, tree, n, what)
    if cur.failed then
        return nil
    end
    local left = cur.limit - cur.pos
    if left < n then
        cur.failed = true
        local text = string.format("%s needs %d bytes, only %d left", what, n, left)
        if cur.short == "mismatch" then
            problem(ctx, tree, E.length_mismatch,
                "Event body length is shorter than its fields: " .. text)
        else
            problem(ctx, tree, E.truncated, "Truncated: " .. text)
        end
        return nil
    end
    local range = ctx.tvb(cur.pos, n)
    cur.pos = cur.pos + n
    return range
end

-- Add a big-endian unsigned integer field of `n` bytes; returns its value and item, or nil.
local function add_uint(ctx, cur, tree, field, n, what)
    local range = take(ctx, cur, tree, n, what)
    if not range then
        return nil
    end
    return range:uint(), tree:add(field, range)
end

-- Add an id that must not be zero (object ids, tokens).
local function add_nonzero(ctx, cur, tree, field, what)
    local value, item = add_uint(ctx, cur, tree, field, 4, what)
    if value == 0 then
        problem(ctx, item, E.invalid, what .. " is 0 (must be non-zero)")
    end
    return value
end

-- Add a float vector (fields of vector_fields): returns the values, or nil if it did not fit.
local function add_vector(ctx, cur, tree, v, what)
    local count = #v.components
    local range = take(ctx, cur, tree, 4 * count, what)
    if not range then
        return nil
    end
    local values, texts = {}, {}
    for i = 1, count do
        values[i] = range:range(4 * (i - 1), 4):float()
        texts[i] = num(values[i])
    end
    local item = tree:add(v.whole, range, "(" .. table.concat(texts, ", ") .. ")")
    for i, c in ipairs(v.components) do
        local sub = item:add(v[c], range:range(4 * (i - 1), 4))
        if not is_finite(values[i]) then
            problem(ctx, sub, E.non_finite, what .. " " .. c .. " is not finite")
        end
    end
    return values
end

-- Add a string (1-byte length, then the bytes) of at most `max` bytes; returns it, or nil.
local function add_string(ctx, cur, tree, field, max, what)
    local n, len_item = add_uint(ctx, cur, tree, F.ev_string_length, 1, what .. " length")
    if not n then
        return nil
    end
    if n > max then
        problem(ctx, len_item, E.invalid,
            string.format("%s is %d bytes, longer than %d", what, n, max))
    end
    local range = take(ctx, cur, tree, n, what)
    if not range then
        return nil
    end
    if n == 0 then
        tree:add(field, range, "")
        return ""
    end
    local item = tree:add_packet_field(field, range, ENC_UTF_8)
    if range:raw():find("\0", 1, true) then
        problem(ctx, item, E.invalid, what .. " contains a NUL byte")
    end
    return range:string(ENC_UTF_8)
end

-- The 32 bytes of a node read as a UDP backend node ("a.b.c.d:port", "[v6%scope]:port"), or
-- nil when they are not one (another backend's node).
local function udp_node_text(range)
    local b = { range:raw():byte(1, NODE_LEN) }
    local port = b[2] * 256 + b[3]
    local function zero_from(first)
        for i = first, NODE_LEN do
            if b[i] ~= 0 then
                return false
            end
        end
        return true
    end
    if b[1] == 4 and zero_from(8) then
        return string.format("%d.%d.%d.%d:%d", b[4], b[5], b[6], b[7], port)
    elseif b[1] == 6 and zero_from(24) then
        -- Eight groups in hex; the longest run of two or more zero groups becomes "::".
        local groups, best_at, best_len, run_at = {}, nil, 1, nil
        for i = 1, 8 do
            local group = b[2 + 2 * i] * 256 + b[3 + 2 * i]
            groups[i] = string.format("%x", group)
            if group == 0 then
                run_at = run_at or i
                if i - run_at + 1 > best_len then
                    best_at, best_len = run_at, i - run_at + 1
                end
            else
                run_at = nil
            end
        end
        local text
        if best_at then
            text = table.concat(groups, ":", 1, best_at - 1) .. "::"
                .. table.concat(groups, ":", best_at + best_len, 8)
        else
            text = table.concat(groups, ":")
        end
        local scope = ((b[20] * 256 + b[21]) * 256 + b[22]) * 256 + b[23]
        if scope ~= 0 then
            text = text .. "%" .. scope
        end
        return "[" .. text .. "]:" .. port
    end
    return nil
end

-- Add a node and, when it reads as a UDP node, its address (generated); returns the address.
local function add_node(ctx, cur, tree, node_field, address_field)
    local range = take(ctx, cur, tree, NODE_LEN, "node")
    if not range then
        return nil
    end
    local item = tree:add(node_field, range)
    local address = udp_node_text(range)
    if address then
        item:add(address_field, range, address):set_generated()
    end
    return address
end

-- The bytes an entry of `fixed` bytes plus a string whose length byte is at `name_at` takes
-- from the cursor position, clipped to what is left (for the entry's subtree range).
local function entry_range(ctx, cur, fixed, name_at)
    local left = cur.limit - cur.pos
    local len = fixed
    if left > name_at then
        len = fixed + ctx.tvb(cur.pos + name_at, 1):uint()
    end
    return ctx.tvb(cur.pos, math.max(0, math.min(len, left)))
end

-- What a player-list entry and a connect request both end with: a non-zero token, a node and
-- a name. The name and the address are added to the entry's text; returns the name (nil if
-- it could not be read).
local function add_token_node_name(ctx, cur, entry, token_field, node_field, address_field,
                                   name_field, token_what)
    add_nonzero(ctx, cur, entry, token_field, token_what)
    local address = add_node(ctx, cur, entry, node_field, address_field)
    local name = add_string(ctx, cur, entry, name_field, MAX_NAME_LEN, "name")
    if name then
        entry:append_text(": " .. quote(name))
    end
    if address then
        entry:append_text(" at " .. address)
    end
    return name
end

-- A player-list or connect-queue count (1-16).
local function add_count(ctx, cur, tree)
    local count, item = add_uint(ctx, cur, tree, F.ev_entry_count, 1, "entry count")
    if count and (count == 0 or count > MAX_SLOTS) then
        problem(ctx, item, E.invalid, string.format("entry count %d is not 1-%d", count,
            MAX_SLOTS))
    end
    return count
end

---------------------------------------------------------------------------------------------
-- Event bodies: one function per event type. Each adds the fields to `tree` from the body
-- cursor and returns a short summary for the Info column (nil if nothing useful was read).
---------------------------------------------------------------------------------------------

local body = {}

body[RE_CREATEOBJECT] = function(ctx, cur, tree)
    local id = add_nonzero(ctx, cur, tree, F.ev_object_id, "object id")
    add_uint(ctx, cur, tree, F.ev_class, 2, "class")
    add_vector(ctx, cur, tree, V_EV_POS, "position")
    add_vector(ctx, cur, tree, V_EV_ORIENT, "orientation")
    add_uint(ctx, cur, tree, F.ev_object_flags, 4, "object flags")
    return id and ("object " .. id)
end

body[RE_CREATELASER] = function(ctx, cur, tree)
    local id = add_nonzero(ctx, cur, tree, F.ev_object_id, "object id")
    add_uint(ctx, cur, tree, F.ev_class, 2, "class")
    add_vector(ctx, cur, tree, V_EV_POS, "position")
    add_vector(ctx, cur, tree, V_EV_DIR, "direction")
    return id and ("object " .. id)
end

body[RE_CREATEMISSILE] = function(ctx, cur, tree)
    local id = add_nonzero(ctx, cur, tree, F.ev_object_id, "object id")
    add_uint(ctx, cur, tree, F.ev_class, 2, "class")
    add_vector(ctx, cur, tree, V_EV_POS, "position")
    add_vector(ctx, cur, tree, V_EV_DIR, "direction")
    local target = add_uint(ctx, cur, tree, F.ev_target_id, 4, "target id")
    return id and target and string.format("object %d target %d", id, target)
end

body[RE_CREATEEXTRA] = function(ctx, cur, tree)
    local id = add_nonzero(ctx, cur, tree, F.ev_object_id, "object id")
    add_uint(ctx, cur, tree, F.ev_extra_index, 2, "extra index")
    add_vector(ctx, cur, tree, V_EV_POS, "position")
    return id and ("object " .. id)
end

body[RE_KILLOBJECT] = function(ctx, cur, tree)
    local id = add_nonzero(ctx, cur, tree, F.ev_object_id, "object id")
    local list, item = add_uint(ctx, cur, tree, F.ev_list_id, 1, "list id")
    if list and list > MAX_LIST_ID then
        problem(ctx, item, E.invalid, string.format("list id %d is above %d", list,
            MAX_LIST_ID))
    end
    return id and ("object " .. id)
end

body[RE_SENDTEXT] = function(ctx, cur, tree)
    local text = add_string(ctx, cur, tree, F.ev_text, MAX_TEXT_LEN, "text")
    return text and quote(text)
end

body[RE_PLAYERNAME] = function(ctx, cur, tree)
    local name = add_string(ctx, cur, tree, F.ev_name, MAX_NAME_LEN, "name")
    return name and quote(name)
end

body[RE_PARTICLEOBJECT] = function(ctx, cur, tree)
    local particle = add_uint(ctx, cur, tree, F.ev_particle_type, 2, "particle type")
    add_vector(ctx, cur, tree, V_EV_ORIGIN, "origin")
    return particle and ("type " .. particle)
end

body[RE_PLAYERLIST] = function(ctx, cur, tree)
    local count = add_count(ctx, cur, tree)
    if not count then
        return nil
    end
    local seen, names = {}, {}
    for i = 1, count do
        if cur.failed then
            break
        end
        -- slot, flags, token, node, then the name's length byte at offset 38
        local entry = tree:add(F.player, entry_range(ctx, cur, 39, 38))
        entry:set_text("Player " .. i)
        local slot, slot_item = add_uint(ctx, cur, entry, F.pl_slot, 1, "slot")
        if slot then
            if slot >= MAX_SLOTS then
                problem(ctx, slot_item, E.invalid, string.format("slot %d is not 0-%d", slot,
                    MAX_SLOTS - 1))
            elseif seen[slot] then
                problem(ctx, slot_item, E.invalid, string.format("slot %d appears twice", slot))
            end
            seen[slot] = true
            entry:append_text(", slot " .. slot)
        end
        local flags, flags_item = add_uint(ctx, cur, entry, F.pl_flags, 1, "player flags")
        if flags then
            flags_item:add(F.pl_joined, ctx.tvb(cur.pos - 1, 1))
            flags_item:add(F.pl_flag_reserved, ctx.tvb(cur.pos - 1, 1))
            if flags >= 2 then
                problem(ctx, flags_item, E.reserved, "reserved player flag bits are set")
            end
        end
        local name = add_token_node_name(ctx, cur, entry, F.pl_token, F.pl_node, F.pl_address,
            F.pl_name, "player token")
        if name then
            names[#names + 1] = (slot or "?") .. " " .. clean(name)
        end
    end
    return "[" .. table.concat(names, ", ") .. "]"
end

body[RE_CONNECTQUEUE] = function(ctx, cur, tree)
    local count = add_count(ctx, cur, tree)
    if not count then
        return nil
    end
    local names = {}
    for i = 1, count do
        if cur.failed then
            break
        end
        -- token, node, then the name's length byte at offset 36
        local entry = tree:add(F.request, entry_range(ctx, cur, 37, 36))
        entry:set_text("Connect request " .. i)
        local name = add_token_node_name(ctx, cur, entry, F.rq_token, F.rq_node, F.rq_address,
            F.rq_name, "request token")
        if name then
            names[#names + 1] = clean(name)
        end
    end
    return "[" .. table.concat(names, ", ") .. "]"
end

body[RE_CUSTOM] = function(ctx, cur, tree)
    local custom = add_uint(ctx, cur, tree, F.ev_custom_type, 2, "custom type")
    local n, len_item = add_uint(ctx, cur, tree, F.ev_data_length, 2, "data length")
    if not n then
        return nil
    end
    if n > MAX_CUSTOM_DATA then
        problem(ctx, len_item, E.invalid,
            string.format("custom data of %d bytes is longer than %d", n, MAX_CUSTOM_DATA))
    end
    local range = take(ctx, cur, tree, n, "custom data")
    if range and n > 0 then
        tree:add(F.ev_data, range)
    end
    return string.format("type %d (%d bytes)", custom, n)
end

body[RE_PLAYERSTATUS] = function(ctx, cur, tree)
    local joined, item = add_uint(ctx, cur, tree, F.ev_joined, 1, "joined")
    if joined and joined > 1 then
        problem(ctx, item, E.invalid, string.format("joined is %d (must be 0 or 1)", joined))
    end
    local flag = add_uint(ctx, cur, tree, F.ev_unjoin_flag, 1, "unjoin flag")
    if joined == 1 then
        return "joined"
    elseif joined == 0 then
        return flag and ("unjoined (flag " .. flag .. ")") or "unjoined"
    end
    return nil
end

-- RE_RESUME (net-core's stream resumption; not in the game's event set): a hello listing the
-- sender's earlier tokens; an answer per old link (the receiver's and the sender's tokens on
-- it, and the last reliable id of the receiver's stream the sender delivered); "done".
body[RE_RESUME] = function(ctx, cur, tree)
    local step, step_item = add_uint(ctx, cur, tree, F.ev_resume_step, 1, "resume step")
    if step == RESUME_HELLO then
        local count, count_item = add_uint(ctx, cur, tree, F.ev_token_count, 1, "token count")
        if not count then
            return "hello"
        end
        if count > MAX_EARLIER_TOKENS then
            problem(ctx, count_item, E.invalid, string.format(
                "token count %d is above %d", count, MAX_EARLIER_TOKENS))
        end
        local tokens = {}
        for _ = 1, count do
            local token = add_nonzero(ctx, cur, tree, F.ev_earlier_token, "earlier token")
            if not token then
                break
            end
            tokens[#tokens + 1] = string.format("0x%08x", token)
        end
        return "hello [" .. table.concat(tokens, ", ") .. "]"
    elseif step == RESUME_ANSWER then
        local yours = add_nonzero(ctx, cur, tree, F.ev_your_token, "receiver's token")
        local mine = yours and add_nonzero(ctx, cur, tree, F.ev_my_token, "sender's token")
        local delivered = mine and add_uint(ctx, cur, tree, F.ev_delivered_id, 4, "delivered id")
        if delivered then
            return string.format("answer 0x%08x/0x%08x delivered %d", yours, mine, delivered)
        end
        return "answer"
    elseif step == RESUME_DONE then
        return "done"
    elseif step then
        problem(ctx, step_item, E.invalid, string.format("resume step %d is not 1, 2 or 3", step))
    end
    return nil
end

-- RE_RATE (net-core's; not in the game's event set): the sender's receive rate (`net.rate`).
body[RE_RATE] = function(ctx, cur, tree)
    local rate = add_uint(ctx, cur, tree, F.ev_rate, 4, "rate")
    if rate then
        return rate == 0 and "rate unlimited" or string.format("rate %d bytes/s", rate)
    end
    return nil
end

-- RE_VACATED (net-core's; from a gameserver only): the player seated in the packet's sender
-- slot under this id (its `add ip:` line's) left.
body[RE_VACATED] = function(ctx, cur, tree)
    local told = add_uint(ctx, cur, tree, F.ev_told_id, 4, "told id")
    if told then
        return told == 0 and "the slot's player left" or string.format("player 0x%08x left", told)
    end
    return nil
end

---------------------------------------------------------------------------------------------
-- One remote event
---------------------------------------------------------------------------------------------

-- Dissect the event at the packet cursor `pc` (event number `index`) into `tree`. Returns its
-- Info summary, whether the next event can be found (false once the datagram ran out), and
-- whether any of this event was there.
local function dissect_event(ctx, pc, tree, index)
    local tvb = ctx.tvb
    local start = pc.pos
    local left = pc.limit - start
    if left < 4 then
        return nil, false, false -- reported by the caller, with the count of missing events
    end
    local ty = tvb(start, 1):uint()
    local flags = tvb(start + 1, 1):uint()
    local len = tvb(start + 2, 2):uint()
    local reliable = bit_set(flags, 0)
    local header_len = reliable and 8 or 4
    local total = header_len + len
    local type_name = event_types[ty] or ("unknown event type " .. ty)

    local ev = tree:add(F.event, tvb(start, math.min(total, left)))
    ev:set_text(string.format("Event %d: %s", index, type_name))

    -- Event header: type, flags, body length.
    local type_item = ev:add(F.ev_type, tvb(start, 1))
    if not event_types[ty] then
        problem(ctx, type_item, E.unknown_type, "unknown event type " .. ty)
    end
    local flags_item = ev:add(F.ev_flags, tvb(start + 1, 1))
    flags_item:add(F.ev_reliable, tvb(start + 1, 1))
    flags_item:add(F.ev_flag_reserved, tvb(start + 1, 1))
    if flags >= 2 then
        problem(ctx, flags_item, E.reserved, "reserved event flag bits are set")
    end
    if not reliable and ty ~= RE_CUSTOM and event_types[ty] then
        problem(ctx, flags_item, E.invalid, type_name .. " must be sent reliable")
    end
    local length_item = ev:add(F.ev_length, tvb(start + 2, 2))
    local fixed = fixed_body_len[ty]
    if fixed and fixed ~= len then
        problem(ctx, length_item, E.length_mismatch,
            string.format("%s bodies are %d bytes, not %d", type_name, fixed, len))
    end
    pc.pos = start + 4

    -- Reliable id.
    local id
    if reliable then
        local id_item
        id, id_item = add_uint(ctx, pc, ev, F.ev_id, 4, "reliable id")
        if not id then
            return nil, false, true
        end
        ev:append_text(", id " .. id)
        if id == 0 then
            problem(ctx, id_item, E.invalid, "reliable id is 0 (ids start at 1)")
        end
    end

    -- Body: read within its declared length (or what the datagram has of it).
    local body_start = pc.pos
    local declared_end = body_start + len
    local truncated = declared_end > pc.limit
    if truncated then
        problem(ctx, length_item, E.truncated, string.format(
            "Truncated: the %d-byte body runs past the end of the datagram (%d bytes left)",
            len, pc.limit - body_start))
    end
    local bc = cursor(body_start, math.min(declared_end, pc.limit),
        truncated and "truncated" or "mismatch")
    local summary
    local decode = body[ty]
    if decode then
        summary = decode(ctx, bc, ev)
        if not bc.failed and bc.pos < bc.limit then
            local extra = tvb(bc.pos, bc.limit - bc.pos)
            local item = ev:add(F.ev_extra_bytes, extra)
            problem(ctx, item, E.length_mismatch, string.format(
                "Event body length is %d, but its fields take %d bytes", len, bc.pos - body_start))
        end
    elseif bc.limit > body_start then
        ev:add(F.ev_body, tvb(body_start, bc.limit - body_start))
    end
    if summary then
        ev:append_text(": " .. summary)
    end

    pc.pos = bc.limit
    local text = event_types[ty] or ("event " .. ty)
    if summary then
        text = text .. " " .. summary
    end
    return text, not truncated, true
end

---------------------------------------------------------------------------------------------
-- The packet
---------------------------------------------------------------------------------------------

-- The generated list of acknowledged sequences (ack itself, and ack - 1 - i per set bit i).
local function add_acked(tree, range_ack, range_bits, ack, bits)
    if ack == 0 then
        return
    end
    tree:add(F.acked, range_ack, ack):set_generated()
    for i = 0, 31 do
        if bit_set(bits, i) and ack - 1 - i >= 1 then
            tree:add(F.acked, range_bits, ack - 1 - i):set_generated()
        end
    end
end

-- Dissect one game packet (the signature has been checked) into `root`; returns the Info text.
local function dissect_packet(ctx)
    local root = ctx.root
    local pc = cursor(0, ctx.len, "truncated")

    -- Signature and version.
    local signature = take(ctx, pc, root, 3, "signature")
    if signature then
        root:add(F.signature, signature)
    end
    local version, version_item = add_uint(ctx, pc, root, F.version, 1, "protocol version")
    if not version then
        return "game packet"
    end
    if version ~= PROTOCOL_VERSION then
        problem(ctx, version_item, E.version,
            string.format("protocol version %d is not supported (only %d)", version,
                PROTOCOL_VERSION))
        if pc.pos < ctx.len then
            root:add(F.undecoded, ctx.tvb(pc.pos, ctx.len - pc.pos))
        end
        return "protocol version " .. version
    end

    -- Packet type, sender slot, flags, event count.
    local ty, type_item = add_uint(ctx, pc, root, F.type, 1, "packet type")
    if not ty then
        return "game packet"
    end
    local info = packet_types[ty] or ("type " .. ty)
    root:append_text(", " .. info)
    if not packet_types[ty] then
        problem(ctx, type_item, E.unknown_type, "unknown packet type " .. ty)
    end

    local slot, slot_item = add_uint(ctx, pc, root, F.slot, 1, "sender slot")
    if not slot then
        return info
    end
    if slot == NO_SLOT then
        info = info .. " no slot"
        slot_item:append_text(" (no slot yet)")
    else
        info = info .. " slot " .. slot
        root:append_text(", slot " .. slot)
        if slot >= MAX_SLOTS then
            problem(ctx, slot_item, E.invalid,
                string.format("sender slot %d is not 0-%d or 255", slot, MAX_SLOTS - 1))
        end
    end

    local flags, flags_item = add_uint(ctx, pc, root, F.flags, 1, "flags")
    if not flags then
        return info
    end
    local flags_range = ctx.tvb(pc.pos - 1, 1)
    for _, field in ipairs({ F.flag_state, F.flag_joined, F.flag_ack, F.flag_reserved }) do
        flags_item:add(field, flags_range)
    end
    if flags >= 8 then
        problem(ctx, flags_item, E.reserved, "reserved packet flag bits are set")
    end
    local has_state, has_ack = bit_set(flags, 0), bit_set(flags, 2)

    local count = add_uint(ctx, pc, root, F.count, 1, "event count")
    if not count then
        return info
    end

    -- Sequence, ack, ack bits, token.
    local seq, seq_item = add_uint(ctx, pc, root, F.seq, 4, "sequence")
    if not seq then
        return info
    end
    info = info .. " seq " .. seq
    root:append_text(", seq " .. seq)
    if seq == 0 then
        problem(ctx, seq_item, E.invalid, "sequence is 0 (sequences start at 1)")
    end

    local ack, ack_item = add_uint(ctx, pc, root, F.ack, 4, "ack")
    if not ack then
        return info
    end
    local bits, bits_item = add_uint(ctx, pc, root, F.ack_bits, 4, "ack bits")
    if not bits then
        return info
    end
    if has_ack then
        info = info .. " ack " .. ack
        if ack == 0 then
            problem(ctx, ack_item, E.invalid, "ack flag set but ack is 0")
        end
        add_acked(bits_item, ctx.tvb(pc.pos - 8, 4), ctx.tvb(pc.pos - 4, 4), ack, bits)
    else
        if ack ~= 0 then
            problem(ctx, ack_item, E.invalid, "ack is not 0 although the ack flag is clear")
        end
        if bits ~= 0 then
            problem(ctx, bits_item, E.invalid,
                "ack bits are not 0 although the ack flag is clear")
        end
    end

    local token = add_nonzero(ctx, pc, root, F.token, "session token")
    if not token then
        return info
    end

    -- Ship state.
    local contents = {}
    if has_state then
        local state = root:add(F.state, ctx.tvb(pc.pos, math.min(72, pc.limit - pc.pos)))
        local pos = add_vector(ctx, pc, state, V_STATE_POS, "position")
        add_vector(ctx, pc, state, V_STATE_ORIENT, "orientation")
        add_vector(ctx, pc, state, V_STATE_VEL, "velocity")
        local game = take(ctx, pc, state, GAME_AREA_LEN, "game area")
        if game then
            state:add(F.state_game, game)
        end
        if pos then
            local text = string.format("(%s, %s, %s)", num(pos[1]), num(pos[2]), num(pos[3]))
            state:append_text(": position " .. text)
            contents[#contents + 1] = "state " .. text
        end
        if pc.failed then
            return info .. ": " .. table.concat(contents, ", ")
        end
    end

    -- Remote events.
    for index = 1, count do
        local text, go_on, started = dissect_event(ctx, pc, root, index)
        if text then
            contents[#contents + 1] = text
        end
        if not go_on then
            if not started then
                problem(ctx, root, E.truncated, string.format(
                    "Truncated: event %d needs a 4-byte header, only %d bytes left "
                    .. "(%d of the %d events are missing)",
                    index, pc.limit - pc.pos, count - index + 1, count))
            elseif index < count then
                problem(ctx, root, E.truncated, string.format(
                    "Truncated: %d of the %d events are missing", count - index, count))
            end
            break
        end
    end

    -- Nothing may follow the last event.
    if not pc.failed and pc.pos < ctx.len then
        local item = root:add(F.trailing, ctx.tvb(pc.pos, ctx.len - pc.pos))
        problem(ctx, item, E.trailing,
            string.format("%d bytes follow the last event", ctx.len - pc.pos))
    end

    if #contents > 0 then
        info = info .. ": " .. table.concat(contents, ", ")
    end
    return info
end

-- Dissect a datagram known to start with the signature: tree, columns, and a safety net that
-- turns any Lua error (a bug here, never bad input) into expert info instead of a failure.
local function dissect(tvb, pinfo, tree)
    pinfo.cols.protocol:set("ParsecNet")
    local root = tree:add(parsecnet, tvb())
    local ctx = new_context(tvb, root)
    local ok, info = pcall(dissect_packet, ctx)
    if not ok then
        root:add_proto_expert_info(E.internal, "parsec_net.lua failed: " .. tostring(info))
        info = "game packet (dissector error)"
    end
    if tvb:reported_len() > ctx.len then
        root:append_text(" [cut short by the capture's snapshot length]")
    end
    if ctx.first_problem then
        info = info .. " [" .. ctx.first_problem .. "]"
    end
    pinfo.cols.info:set(info)
    return ctx.len
end

-- Whether a datagram starts with the game packet signature (what the library itself checks:
-- at least 4 bytes, "PSN").
local function has_signature(tvb)
    return tvb:len() >= 4 and tvb:raw(0, 3) == SIGNATURE
end

-- On the registered ports: every datagram with the signature, whatever its version (so an
-- unsupported version shows as one); others are left to the next dissector (returning 0).
function parsecnet.dissector(tvb, pinfo, tree)
    if not has_signature(tvb) then
        return 0
    end
    return dissect(tvb, pinfo, tree)
end

-- Anywhere else: the heuristic takes datagrams with the signature and protocol version 1.
local function heuristic(tvb, pinfo, tree)
    if not has_signature(tvb) or tvb(3, 1):uint() ~= PROTOCOL_VERSION then
        return false
    end
    dissect(tvb, pinfo, tree)
    return true
end
parsecnet:register_heuristic("udp", heuristic)

---------------------------------------------------------------------------------------------
-- Ports (a preference: "parsecnet.udp_ports")
---------------------------------------------------------------------------------------------

parsecnet.prefs.udp_ports = Pref.range("UDP ports", DEFAULT_PORTS,
    "UDP ports always decoded as parsec-net game packets (6526: game clients, 6522: "
    .. "gameserver); game packets on other ports are found by the heuristic", 65535)

local registered_ports = ""

local function register_ports()
    local udp_port = DissectorTable.get("udp.port")
    if registered_ports ~= "" then
        udp_port:remove(registered_ports, parsecnet)
    end
    registered_ports = parsecnet.prefs.udp_ports or ""
    if registered_ports ~= "" then
        udp_port:add(registered_ports, parsecnet)
    end
end

parsecnet.prefs_changed = register_ports
register_ports()
