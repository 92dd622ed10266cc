//! Renames through a slot or game server (`my new name: NAME`). Names are unique on a server,
//! so a new name is told to the other players (RE_PLAYERNAME) only once the server answered
//! `new name accepted`; on `name already taken` the name in use stays, and the game is told
//! so in a player's words. The server answers a client's lines in order, so each answer is for
//! the oldest name still waiting.

use std::collections::VecDeque;

use crate::protocol::NameRefusal;
use crate::rmev::PlayerName;
use crate::session::Session;

/// The names asked of the server and not answered yet, and the refusals not yet taken.
#[derive(Debug, Default)]
pub struct Renames {
    asked: VecDeque<PlayerName>,
    refusals: VecDeque<NameRefusal>,
}

impl Renames {
    /// `name` went to the server: the game's events from now on wait for the answer.
    pub fn asked(&mut self, name: PlayerName, session: &mut Session) {
        self.asked.push_back(name);
        session.ask_rename();
    }

    /// The server accepted the oldest name asked: the others are told now.
    pub fn accepted(&mut self, session: &mut Session) {
        let Some(name) = self.asked.pop_front() else {
            return;
        };
        if let Err(err) = session.rename_answered(Some(name)) {
            log::warn!("cannot tell the others the new name {name}: {err}");
        }
    }

    /// The server refused the oldest name asked (`reason`: its answer, e.g. "name already
    /// taken"): what to tell the player. The name in use (the last one the server accepted)
    /// stays.
    pub fn refused(&mut self, session: &mut Session, reason: &str) -> String {
        let kept = *session.my_name();
        match self.asked.pop_front() {
            Some(refused) => {
                if let Err(err) = session.rename_answered(None) {
                    log::warn!("cannot send the events queued after asking for {refused}: {err}");
                }
                self.refusals.push_back(NameRefusal { refused, kept });
                format!(
                    "the server refused the name '{refused}' ({reason}); your name stays '{kept}'"
                )
            }
            None => format!("the server says: {reason}; your name stays '{kept}'"),
        }
    }

    /// The next refusal, for the game's name to go back.
    pub fn poll_refusal(&mut self) -> Option<NameRefusal> {
        self.refusals.pop_front()
    }

    /// Whether a name asked is still waiting for the server's answer.
    pub fn waiting(&self) -> bool {
        !self.asked.is_empty()
    }

    /// The connection ended: what was asked will not be answered.
    pub fn clear(&mut self) {
        self.asked.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use super::*;
    use crate::session::{LocalPlayer, SessionConfig};
    use crate::Node;

    fn name(text: &str) -> PlayerName {
        PlayerName::new(text.as_bytes()).unwrap()
    }

    /// A session with one other player seated (so a name told to the others is queued).
    fn session() -> Session {
        let now = Instant::now();
        let me = LocalPlayer {
            slot: 0,
            token: 1,
            name: name("maverick"),
        };
        let mut session =
            Session::new_mesh(SessionConfig::default(), Arc::new(|a, b| a == b), me, now);
        session.add_player(now, 1, Node::default(), 2, name("goose"), false);
        session
    }

    #[test]
    fn answers_go_to_the_names_asked_oldest_first() {
        let mut session = session();
        let mut renames = Renames::default();
        let queued = session.unacknowledged();
        renames.asked(name("goose"), &mut session);
        renames.asked(name("iceman"), &mut session);
        assert_eq!(session.unacknowledged(), queued, "nothing told yet");
        let text = renames.refused(&mut session, "name already taken");
        assert_eq!(
            text,
            "the server refused the name 'goose' (name already taken); your name stays 'maverick'"
        );
        assert_eq!(
            renames.poll_refusal(),
            Some(NameRefusal {
                refused: name("goose"),
                kept: name("maverick")
            })
        );
        assert_eq!(
            session.unacknowledged(),
            queued,
            "a refused name is not told"
        );
        renames.accepted(&mut session);
        assert_eq!(session.my_name(), &name("iceman"));
        assert_eq!(session.unacknowledged(), queued + 1, "an accepted one is");
        assert_eq!(renames.poll_refusal(), None);
    }

    fn chat(text: &str) -> crate::rmev::RemoteEvent {
        crate::rmev::RemoteEvent::SendText(crate::rmev::ChatText::new(text.as_bytes()).unwrap())
    }

    /// Events the game queues while its rename waits for the server go out after the new name
    /// (so the others get them after it); after a refusal they go out alone. Events queued
    /// before a second rename was asked do not wait for its answer.
    #[test]
    fn events_queued_while_a_rename_waits_go_out_after_the_answer() {
        let mut session = session();
        let mut renames = Renames::default();
        let queued = session.unacknowledged();
        renames.asked(name("iceman"), &mut session);
        session.queue_event(chat("after iceman")).unwrap();
        renames.asked(name("goose"), &mut session);
        session.queue_event(chat("after goose")).unwrap();
        assert_eq!(session.unacknowledged(), queued, "both wait");
        renames.accepted(&mut session);
        assert_eq!(
            session.unacknowledged(),
            queued + 2,
            "RE_PLAYERNAME iceman, then the chat queued after asking it"
        );
        renames.refused(&mut session, "name already taken");
        assert_eq!(session.unacknowledged(), queued + 3, "the last chat alone");
        assert_eq!(session.my_name(), &name("iceman"));
        session.queue_event(chat("now")).unwrap();
        assert_eq!(
            session.unacknowledged(),
            queued + 4,
            "nothing waits any more"
        );
    }

    #[test]
    fn an_answer_nobody_asked_for_changes_nothing() {
        let mut session = session();
        let mut renames = Renames::default();
        renames.asked(name("iceman"), &mut session);
        renames.clear();
        renames.accepted(&mut session);
        assert_eq!(session.my_name(), &name("maverick"));
        assert!(renames
            .refused(&mut session, "name already taken")
            .contains("stays 'maverick'"));
        assert_eq!(renames.poll_refusal(), None);
    }
}
