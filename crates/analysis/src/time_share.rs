//! How the rounds of a resolve or a tune share their time between the questions still
//! open (each runtime, pipeline, rank count and cache its own recommendation). Each
//! question is charged what its configs took in the rounds so far, and an equal share of
//! each round's start-up among the questions the round measured. A round measures the
//! question whose next round would end soonest (its charge and the round's cost
//! together), with every question whose next round would end within one round of that
//! one. So a question whose configs take a tenth of a second (our engine's, beside the
//! PyTorch runtime's of seconds) is measured round after round first, until it has been
//! charged about as much as one round of the slow one, and then both share the rounds;
//! questions of about the same cost share every round, and its start-up. A question
//! that may never settle (every comparison it is open on sits at the tie margin:
//! [`Verdict::may_never_settle`](crate::recommend::Verdict)) waits while another open
//! question may: its rounds would go on telling a tie from a gain, where the other's can
//! settle an answer. It is measured again once every open question waits.

use std::collections::HashMap;

use loaderbench_engine::plan::Config;

use crate::recommend::same_question;

/// An open question: the configs a round of it measures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Question {
    /// What the question is known by: its first config in the plan.
    pub first: usize,
    /// The configs a round of it measures, the likeliest to matter first.
    pub configs: Vec<usize>,
    /// Its verdict may never settle: it waits while another question may.
    pub waits: bool,
}

impl Question {
    /// The question of `config` (an index into `configs`) measuring `measures`.
    pub(crate) fn of(configs: &[Config], config: usize, measures: Vec<usize>) -> Question {
        let first = (0..configs.len())
            .find(|&i| same_question(&configs[i], &configs[config]))
            .unwrap_or(config);
        Question {
            first,
            configs: measures,
            waits: false,
        }
    }

    /// This question, waiting while another may settle where its verdict `may_never_settle`.
    pub(crate) fn waiting(self, may_never_settle: bool) -> Question {
        Question {
            waits: may_never_settle,
            ..self
        }
    }

    /// `candidates` (indices into `configs`) grouped into their questions, in plan order.
    pub(crate) fn all(configs: &[Config], candidates: &[usize]) -> Vec<Question> {
        let mut questions: Vec<Question> = Vec::new();
        for &index in candidates {
            let question = Question::of(configs, index, vec![index]);
            match questions.iter_mut().find(|q| q.first == question.first) {
                Some(known) => known.configs.push(index),
                None => questions.push(question),
            }
        }
        questions.sort_by_key(|q| q.first);
        questions
    }
}

/// The seconds of a resolve's or a tune's rounds charged to each question so far.
#[derive(Debug, Default)]
pub(crate) struct TimeShares {
    charged: HashMap<usize, f64>,
}

impl TimeShares {
    /// The questions whose turn it is, given what a round of each would `cost`: the
    /// question whose next round would end soonest, and every question whose next round
    /// would end within one round of that one's; of the questions that do not wait, while
    /// there are any.
    pub(crate) fn due(
        &self,
        questions: &[Question],
        cost: impl Fn(&Question) -> f64,
    ) -> Vec<Question> {
        let settling: Vec<Question> = questions.iter().filter(|q| !q.waits).cloned().collect();
        let questions = if settling.is_empty() {
            questions
        } else {
            &settling
        };
        let ends: Vec<(f64, f64)> = questions
            .iter()
            .map(|q| {
                let cost = cost(q);
                (
                    self.charged.get(&q.first).copied().unwrap_or(0.0) + cost,
                    cost,
                )
            })
            .collect();
        let Some(&(soonest, its_cost)) = ends.iter().min_by(|a, b| a.0.total_cmp(&b.0)) else {
            return Vec::new();
        };
        questions
            .iter()
            .zip(&ends)
            .filter(|(_, (end, _))| *end <= soonest + its_cost)
            .map(|(q, _)| q.clone())
            .collect()
    }

    /// Charges each of `questions` that the round measured the seconds its configs took
    /// (`seconds`, per config) and an equal share of the round's `overhead_s`.
    pub(crate) fn charge(
        &mut self,
        questions: &[Question],
        seconds: &[(usize, f64)],
        overhead_s: f64,
    ) {
        let measured: Vec<&Question> = questions
            .iter()
            .filter(|q| seconds.iter().any(|(c, _)| q.configs.contains(c)))
            .collect();
        for question in &measured {
            let own: f64 = seconds
                .iter()
                .filter(|(c, _)| question.configs.contains(c))
                .map(|(_, s)| s)
                .sum();
            *self.charged.entry(question.first).or_default() +=
                own + overhead_s / measured.len() as f64;
        }
    }

    #[cfg(test)]
    fn charged(&self, question: usize) -> f64 {
        self.charged.get(&question).copied().unwrap_or(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loaderbench_measure::fixtures::{config, pytorch_config};

    fn question(first: usize, configs: &[usize]) -> Question {
        Question {
            first,
            configs: configs.to_vec(),
            waits: false,
        }
    }

    #[test]
    fn candidates_are_grouped_by_question_in_plan_order() {
        let configs = [
            config(0, false),
            pytorch_config(0),
            config(2, false),
            pytorch_config(2),
        ];
        assert_eq!(
            Question::all(&configs, &[3, 2, 1]),
            [question(0, &[2]), question(1, &[3, 1])]
        );
    }

    #[test]
    fn questions_of_about_the_same_cost_share_their_rounds() {
        let questions = [question(0, &[0, 1]), question(2, &[2, 3])];
        let cost = |q: &Question| if q.first == 0 { 10.0 } else { 12.0 };
        let mut shares = TimeShares::default();
        assert_eq!(shares.due(&questions, cost), questions);
        // A question charged a round ahead waits for the other.
        shares.charge(&questions, &[(2, 12.0)], 0.0);
        assert_eq!(shares.due(&questions, cost), questions[..1]);
    }

    /// A question that may never settle waits while another may, though its rounds are
    /// the cheaper and it was charged less; once every question waits, they share the
    /// rounds again.
    #[test]
    fn a_question_that_may_never_settle_waits_while_another_may() {
        let at_the_margin = question(0, &[0, 1]).waiting(true);
        let open = question(2, &[2, 3]);
        let cost = |q: &Question| if q.first == 0 { 1.0 } else { 10.0 };
        let mut shares = TimeShares::default();
        shares.charge(std::slice::from_ref(&open), &[(2, 30.0)], 0.0);
        let questions = [at_the_margin.clone(), open.clone()];
        assert_eq!(shares.due(&questions, cost), questions[1..]);
        let both_wait = [at_the_margin.clone(), open.waiting(true)];
        assert_eq!(shares.due(&both_wait, cost), [at_the_margin]);
    }

    #[test]
    fn open_questions_share_the_time_so_a_quick_one_gets_many_rounds() {
        // The slow question's round measures two configs of 15 s, the quick one's two of
        // 0.2 s, each round starting in 0.6 s (shared among the questions it measures).
        let (slow, quick) = (0, 2);
        let questions = [question(slow, &[0, 1]), question(quick, &[2, 3])];
        let cost_s = [15.0, 15.0, 0.2, 0.2];
        let overhead_s = 0.6;
        let own_round_s =
            |q: &Question| q.configs.iter().map(|&c| cost_s[c]).sum::<f64>() + overhead_s;
        let mut shares = TimeShares::default();
        let mut rounds = HashMap::<usize, usize>::new();
        let mut spent_s = 0.0;
        let mut first_round = Vec::new();
        while spent_s < 120.0 {
            let due = shares.due(&questions, own_round_s);
            assert!(!due.is_empty(), "some question is always due");
            if first_round.is_empty() {
                first_round = due.iter().map(|q| q.first).collect();
            }
            let seconds: Vec<(usize, f64)> = due
                .iter()
                .flat_map(|q| q.configs.iter().map(|&c| (c, cost_s[c])))
                .collect();
            spent_s += seconds.iter().map(|(_, s)| s).sum::<f64>() + overhead_s;
            for question in &due {
                *rounds.entry(question.first).or_default() += 1;
            }
            shares.charge(&questions, &seconds, overhead_s);
        }
        // Each question was charged about half the time, the quick one's rounds many
        // more, and first: before, every round held both, and the quick question had one
        // round for each of the slow one's.
        let (slow_s, quick_s) = (shares.charged(slow), shares.charged(quick));
        assert!(
            (slow_s - quick_s).abs() <= own_round_s(&questions[0]),
            "{slow_s} s against {quick_s} s"
        );
        assert_eq!(first_round, [quick]);
        assert_eq!(rounds[&slow], 2);
        assert!(rounds[&quick] >= 50, "{} rounds", rounds[&quick]);
    }
}
