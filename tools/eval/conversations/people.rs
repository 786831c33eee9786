//! The word lists people's lives are drawn from: names, hobbies, trips,
//! pets, relatives, jobs, achievements, dislikes, books, and the small talk
//! around them. Each entry says a thing one way; the questions ask it in
//! other words where people would (a trip to Lisbon is "abroad", cilantro
//! is "coriander").

pub(super) const NAMES: &[&str] = &[
    "Maria", "Jon", "Priya", "Tomasz", "Aisha", "Lena", "Marcus", "Yuki", "Omar", "Sofia", "Dev", "Hannah", "Kofi",
    "Ines", "Rafael", "Mei", "Noah", "Leila", "Sven", "Chloe", "Arjun", "Beatriz", "Felix", "Nadia", "Oscar", "Zara",
    "Diego", "Elif", "Hugo", "Amara", "Luca", "Freya", "Tariq", "Camille", "Ivan", "Rosa", "Kenji", "Mira", "Pablo",
    "Greta", "Samir", "Esme", "Ravi", "Ingrid", "Mateo", "Hana", "Bruno", "Talia",
];

/// A hobby: what a list question calls it, how its owner says they took it
/// up, and how they say it is going later (a second turn that names the
/// hobby only through its things).
pub(super) struct Hobby {
    pub name: &'static str,
    pub started: [&'static str; 2],
    pub progress: &'static str,
}

pub(super) const HOBBIES: &[Hobby] = &[
    Hobby {
        name: "pottery",
        started: [
            "I finally signed up for a pottery class at the community studio, my first bowl came out completely lopsided",
            "I've been going to a ceramics studio on Thursday nights, throwing clay on the wheel is so calming",
        ],
        progress: "my glazes are finally coming out even, the teacher put one of my mugs on the display shelf",
    },
    Hobby {
        name: "rock climbing",
        started: [
            "I joined the bouldering gym downtown, my forearms are destroyed after every session",
            "I've started climbing at the indoor wall twice a week, I topped my first V3 on Saturday",
        ],
        progress: "I finally sent the overhang route I'd been falling off for weeks, the whole gym cheered",
    },
    Hobby {
        name: "baking sourdough",
        started: [
            "I've started baking sourdough, I named the starter Doughy and feed it every morning",
            "I got really into bread this month, my first sourdough loaf was flat but tasted amazing",
        ],
        progress: "my loaves finally have a proper open crumb, I gave one to every neighbour on the street",
    },
    Hobby {
        name: "salsa dancing",
        started: [
            "I signed up for salsa lessons with a friend, I stepped on her toes about forty times",
            "I've been going to Latin dance classes on Tuesdays, the instructor says my hips are too stiff",
        ],
        progress: "we danced a whole song at the social on Friday without me missing a single turn",
    },
    Hobby {
        name: "birdwatching",
        started: [
            "I bought binoculars and a field guide, I've been out at the marsh at dawn spotting herons",
            "I've gotten into birding, I keep a list now and saw a kingfisher by the river this week",
        ],
        progress: "my bird list is up to sixty species, I finally saw the barn owl everyone talks about",
    },
    Hobby {
        name: "knitting",
        started: [
            "I taught myself to knit from videos, my first scarf is wonky but I wear it anyway",
            "I've been knitting in the evenings, I'm halfway through a sweater for my dad",
        ],
        progress: "I finished the sweater and it actually fits, only one sleeve is slightly longer",
    },
    Hobby {
        name: "photography",
        started: [
            "I bought a secondhand film camera and I've been shooting street photos every weekend",
            "I started taking photography seriously, I'm learning manual mode on an old Nikon",
        ],
        progress: "two of my prints got picked for the library's photo exhibition next month",
    },
    Hobby {
        name: "gardening",
        started: [
            "I started a vegetable patch in the backyard, the tomatoes are already taller than me",
            "I rented an allotment plot, I spent the whole weekend digging beds and planting beans",
        ],
        progress: "we picked our first zucchini harvest, I have more squash than I know what to do with",
    },
    Hobby {
        name: "chess",
        started: [
            "I joined a chess club at the library, I lost every game but learned three openings",
            "I've been playing chess online every night, my rating went up two hundred points",
        ],
        progress: "I won my first over-the-board tournament game with the Sicilian, I was shaking",
    },
    Hobby {
        name: "surfing",
        started: [
            "I took my first surf lesson, I stood up on the board twice before wiping out",
            "I've been getting up at six to catch waves before work, I bought a used longboard",
        ],
        progress: "I caught a proper green wave all the way to the beach on Sunday, best feeling ever",
    },
    Hobby {
        name: "woodworking",
        started: [
            "I set up a little workshop in the garage and built a bookshelf from reclaimed pine",
            "I took a woodworking course, I made a cutting board with dovetail joints",
        ],
        progress: "the coffee table I built is done, I sanded it for two days and oiled it last night",
    },
    Hobby {
        name: "playing the cello",
        started: [
            "I rented a cello and started lessons, my neighbours are being very patient",
            "I've been learning the cello, I can almost play the prelude from the first suite",
        ],
        progress: "I played in my teacher's student recital, only squeaked once in the slow part",
    },
    Hobby {
        name: "running",
        started: [
            "I started the couch to 5k program, week three nearly killed me",
            "I've been jogging along the river every morning before work, I bought proper trainers",
        ],
        progress: "I ran ten kilometres without stopping yesterday, my pace is way down",
    },
    Hobby {
        name: "painting",
        started: [
            "I bought a set of watercolours and I've been painting the view from my balcony",
            "I joined an oil painting class, my first still life of lemons looks like potatoes",
        ],
        progress: "I sold a painting at the craft fair, a stranger paid forty dollars for my harbour scene",
    },
    Hobby {
        name: "volunteering at the animal shelter",
        started: [
            "I started volunteering at the animal shelter on Saturdays, walking dogs and cleaning kennels",
            "I signed up to foster kittens for the rescue centre, three tiny ones are in my bathroom",
        ],
        progress: "one of the shelter dogs I walk every week finally got adopted by a lovely family",
    },
    Hobby {
        name: "learning Japanese",
        started: [
            "I started Japanese lessons online, hiragana is fine but the kanji are brutal",
            "I've been studying Japanese every evening with flashcards, I can read a menu now",
        ],
        progress: "I had a whole conversation with my tutor without switching to English",
    },
    Hobby {
        name: "cycling",
        started: [
            "I bought a road bike and joined a Sunday group ride, we did sixty kilometres",
            "I've been cycling to work every day now, my legs are finally getting used to the hill",
        ],
        progress: "I did my first century ride, a hundred miles, and my knees are still speaking to me",
    },
    Hobby {
        name: "board games",
        started: [
            "I started hosting a board game night, we played Catan until two in the morning",
            "I've gotten into tabletop games, I bought Wingspan and we play it every Friday",
        ],
        progress: "our game group grew to eight people, we need a bigger table now",
    },
    Hobby {
        name: "yoga",
        started: [
            "I joined a yoga studio near work, I can almost touch my toes now",
            "I've been doing yoga every morning on the balcony, my back pain is basically gone",
        ],
        progress: "I held a headstand for a full minute in class, the instructor clapped",
    },
    Hobby {
        name: "stand-up comedy",
        started: [
            "I signed up for an open mic night and did five minutes of stand-up, two people laughed",
            "I've been writing jokes and doing comedy open mics on Wednesdays, it's terrifying",
        ],
        progress: "I got booked for a real comedy showcase, a paid spot, twenty dollars and a drink",
    },
    Hobby {
        name: "swimming",
        started: [
            "I joined the public pool and I've been swimming laps three mornings a week",
            "I took adult swim lessons, I can finally do freestyle breathing without panicking",
        ],
        progress: "I swam a full mile in the lake without stopping, the water was freezing",
    },
    Hobby {
        name: "beekeeping",
        started: [
            "I got my first beehive, the bees arrived in a box in the mail and I was terrified",
            "I took a beekeeping course and set up a hive at the end of the garden",
        ],
        progress: "we harvested the first honey from the hive, twelve jars of it",
    },
];

/// A place someone went, and how they say it.
pub(super) struct Trip {
    pub place: &'static str,
    pub abroad: bool,
    pub told: &'static str,
}

pub(super) const TRIPS: &[Trip] = &[
    Trip {
        place: "Lisbon",
        abroad: true,
        told: "a long weekend in Lisbon, the custard tarts alone were worth the flight",
    },
    Trip {
        place: "Kyoto",
        abroad: true,
        told: "ten days in Kyoto, we saw the temples at sunrise and ate way too much ramen",
    },
    Trip { place: "Mexico City", abroad: true, told: "a week in Mexico City, the tacos al pastor changed my life" },
    Trip { place: "Reykjavik", abroad: true, told: "Reykjavik, we soaked in hot springs and saw the northern lights" },
    Trip { place: "Barcelona", abroad: true, told: "Barcelona, we walked around the Sagrada Familia for hours" },
    Trip { place: "Edinburgh", abroad: true, told: "Edinburgh for the festival, it rained every single day" },
    Trip { place: "Marrakech", abroad: true, told: "Marrakech, the markets were overwhelming in the best way" },
    Trip { place: "Vancouver", abroad: true, told: "Vancouver to see my cousins, we kayaked around Stanley Park" },
    Trip { place: "Hanoi", abroad: true, told: "Hanoi, I rode on the back of a scooter through the old quarter" },
    Trip { place: "Buenos Aires", abroad: true, told: "Buenos Aires, we took a tango class and ate steak every night" },
    Trip { place: "Istanbul", abroad: true, told: "Istanbul, we took a ferry across the Bosphorus at sunset" },
    Trip { place: "Amsterdam", abroad: true, told: "Amsterdam, we rented bikes and got lost along the canals" },
    Trip {
        place: "Cape Town",
        abroad: true,
        told: "Cape Town, we hiked up Table Mountain and saw penguins on the beach",
    },
    Trip { place: "Seoul", abroad: true, told: "Seoul, the night markets and the karaoke rooms were incredible" },
    Trip {
        place: "the Grand Canyon",
        abroad: false,
        told: "a camping trip at the Grand Canyon, it was freezing at night",
    },
    Trip { place: "New Orleans", abroad: false, told: "New Orleans, jazz on every corner and beignets for breakfast" },
    Trip {
        place: "Yellowstone",
        abroad: false,
        told: "Yellowstone, we watched Old Faithful and a bison blocked our car",
    },
    Trip { place: "Nashville", abroad: false, told: "Nashville for a bachelorette party, so much country music" },
    Trip { place: "Maine", abroad: false, told: "a cabin in Maine, lobster rolls and a lot of fog" },
    Trip { place: "Santa Fe", abroad: false, told: "Santa Fe, the adobe buildings and the green chile were great" },
    Trip { place: "Chicago", abroad: false, told: "Chicago, we did the architecture boat tour and ate deep dish" },
    Trip { place: "the Outer Banks", abroad: false, told: "a beach house on the Outer Banks with the whole family" },
];

/// A pet: its kind, as said and as asked.
pub(super) const PETS: &[(&str, &str)] = &[
    ("rescue greyhound", "dog"),
    ("beagle puppy", "dog"),
    ("border collie", "dog"),
    ("scruffy terrier mix", "dog"),
    ("tabby kitten", "cat"),
    ("black cat from the shelter", "cat"),
    ("ginger cat", "cat"),
    ("lop-eared rabbit", "rabbit"),
    ("cockatiel", "bird"),
    ("corgi", "dog"),
];

pub(super) const PET_NAMES: &[&str] = &[
    "Pepper",
    "Biscuit",
    "Mochi",
    "Juniper",
    "Waffles",
    "Pickle",
    "Nugget",
    "Olive",
    "Bean",
    "Ziggy",
    "Clementine",
    "Tofu",
    "Basil",
    "Marble",
    "Rocket",
    "Pancake",
    "Hazel",
    "Noodle",
    "Fig",
    "Boots",
];

/// What a pet does later, said with its name only.
pub(super) const PET_NEWS: &[&str] = &[
    "{pet} chewed through the TV remote and half a shoe last night",
    "{pet} had to go to the vet after swallowing a sock, she's fine now",
    "{pet} finally learned to sit and give a paw, I was so proud",
    "{pet} escaped through the fence and I chased her around the block in my slippers",
    "{pet} knocked a whole potted plant off the windowsill this morning",
    "{pet} won a rosette at the neighbourhood pet show, best in show for the small ones",
];

pub(super) const RELATIVES: &[&str] = &["brother", "sister", "cousin", "younger brother", "older sister"];

pub(super) const RELATIVE_NAMES: &[&str] =
    &["Tomas", "Ana", "Kai", "Lucia", "Eli", "Nora", "Sami", "Julia", "Teo", "Mara", "Ben", "Ada", "Luis", "Ruth"];

pub(super) const CITIES: &[&str] = &[
    "Denver",
    "Seattle",
    "Austin",
    "Boston",
    "Portland",
    "Atlanta",
    "Minneapolis",
    "San Diego",
    "Pittsburgh",
    "Phoenix",
    "Detroit",
    "Raleigh",
];

pub(super) const WORKPLACES: &[&str] = &[
    "a children's hospital",
    "a robotics startup",
    "a public school",
    "a brewery",
    "the city newspaper",
    "a law firm",
    "a climate research lab",
    "a bakery",
];

/// What a relative did later, said with their name only.
pub(super) const RELATIVE_NEWS: &[&str] = &[
    "{name} got engaged last weekend, the proposal was on a mountain top",
    "{name} is expecting a baby in the spring, I'm going to be an aunt",
    "{name} quit and opened a food truck selling dumplings",
    "{name} broke a leg skiing and is stuck on the couch for six weeks",
    "{name} bought a house with a huge yard, the housewarming is next month",
    "{name} ran for the city council and actually won the seat",
];

/// A new job: the role, and the kind of place.
pub(super) const JOBS: &[(&str, &str)] = &[
    ("product designer", "a design studio"),
    ("nurse practitioner", "a clinic"),
    ("data analyst", "an insurance company"),
    ("sous chef", "an Italian restaurant"),
    ("high school chemistry teacher", "a charter school"),
    ("software engineer", "a fintech startup"),
    ("museum curator", "the natural history museum"),
    ("park ranger", "the state park"),
    ("marketing manager", "a sneaker brand"),
    ("physical therapist", "a sports clinic"),
];

/// Something done, said, and whether it is about fitness.
pub(super) struct Achievement {
    pub said: &'static str,
    pub asked: &'static str,
    pub sporty: bool,
}

pub(super) const ACHIEVEMENTS: &[Achievement] = &[
    Achievement {
        said: "I ran the half marathon on Sunday, finished in one hour fifty-two",
        asked: "run the half marathon",
        sporty: true,
    },
    Achievement {
        said: "I passed my driving test on the second try, the examiner even smiled",
        asked: "get a driver's licence",
        sporty: false,
    },
    Achievement {
        said: "I got my scuba diving certification, the last dive was in a quarry with zero visibility",
        asked: "become a certified diver",
        sporty: true,
    },
    Achievement {
        said: "I finished my first triathlon, the swim part was chaos",
        asked: "do a triathlon",
        sporty: true,
    },
    Achievement {
        said: "my short story got published in a literary magazine, they paid me fifty dollars",
        asked: "get a story published",
        sporty: false,
    },
    Achievement {
        said: "I defended my master's thesis and passed with distinction",
        asked: "finish a master's degree",
        sporty: false,
    },
    Achievement {
        said: "I climbed Mount Rainier with a guide group, we summited at dawn",
        asked: "climb a mountain",
        sporty: true,
    },
    Achievement {
        said: "I paid off the last of my student loans, I celebrated with cheap champagne",
        asked: "clear a student debt",
        sporty: false,
    },
];

/// A dislike, how it is said, and a question whose answer follows from it
/// in other words.
pub(super) const DISLIKES: &[(&str, &str)] = &[
    (
        "honestly I can't eat anything with cilantro, it tastes like soap to me",
        "Would {name} enjoy a salsa loaded with fresh coriander?",
    ),
    ("I've been allergic to shellfish since I was a kid", "Can {name} eat a shrimp cocktail?"),
    ("anything spicier than black pepper and I'm in tears", "Would {name} like a fiery vindaloo curry?"),
    ("I'm lactose intolerant, so cheese boards are off limits for me", "Should we serve {name} a fondue?"),
    ("I get really anxious on planes, I grip the armrest the whole flight", "Would {name} enjoy a long-haul flight?"),
    ("I hate the cold, anything below fifty degrees and I'm miserable", "Would {name} like a ski holiday in January?"),
    (
        "big crowds stress me out, I left the stadium concert after two songs",
        "Would {name} enjoy a packed music festival?",
    ),
    (
        "I can't watch horror films, I don't sleep for days afterwards",
        "Should {name} come to a slasher movie marathon?",
    ),
];

pub(super) const BOOKS: &[(&str, &str)] = &[
    ("The Overstory", "it made me want to plant a forest"),
    ("Project Hail Mary", "I laughed out loud on the train"),
    ("Circe", "the writing is gorgeous"),
    ("The Remains of the Day", "so quiet and so sad"),
    ("Educated", "I couldn't believe it was a memoir"),
    ("Piranesi", "it's strange in the best way"),
    ("Braiding Sweetgrass", "I keep thinking about it"),
    ("Dune", "finally, after years of meaning to"),
    ("Pachinko", "four generations and I cried at the end"),
    ("A Gentleman in Moscow", "it's so charming"),
    ("The Martian", "nerdy and hilarious"),
    ("Klara and the Sun", "it broke my heart a little"),
];

/// A partner's question that a fact turn answers; `{topic}` words belong to
/// the fact (so a reply is found through the question it answers).
pub(super) const HOBBY_PROMPTS: &[&str] = &[
    "Picked up any new hobbies lately?",
    "What have you been doing with your evenings these days?",
    "So what keeps you busy outside of work now?",
];
pub(super) const TRIP_PROMPTS: &[&str] =
    &["Did you go anywhere over the holiday?", "How was your trip?", "You were away last week, right? Where to?"];
pub(super) const PET_PROMPTS: &[&str] =
    &["Any news at home?", "Is the house still quiet?", "How's the new place working out?"];
pub(super) const FAMILY_PROMPTS: &[&str] = &["How's your family doing?", "Any family news?", "How are your folks?"];
pub(super) const WORK_PROMPTS: &[&str] =
    &["How's work going?", "Still at the same job?", "Are you still thinking about leaving your job?"];
pub(super) const READING_PROMPTS: &[&str] = &["Read anything good lately?", "What's on your nightstand these days?"];

/// What the other person says after a fact.
pub(super) const REACTIONS: &[&str] = &[
    "Wow, that's amazing!",
    "No way, good for you!",
    "Ha, I love that.",
    "That sounds wonderful.",
    "Oh wow, tell me more sometime.",
    "I'm so happy for you!",
    "That's brilliant, honestly.",
    "Oh no, poor thing! But also kind of funny.",
    "You have to send me pictures.",
    "I'm a little jealous, not going to lie.",
];

pub(super) const GREETINGS: &[&str] = &[
    "Hey {other}! It's been a while, how are you?",
    "Hi {other}, good to catch up again!",
    "{other}! How was your week?",
    "Hey you, got a minute to chat?",
    "Morning {other}! Coffee in hand, ready to talk.",
];

pub(super) const GREETING_REPLIES: &[&str] = &[
    "Hey! Pretty good, busy as always.",
    "Hi! I'm good, tired but good.",
    "Doing well, thanks for asking!",
    "Oh hi! Just got home, perfect timing.",
];

pub(super) const GOODBYES: &[&str] = &[
    "I have to run, talk soon!",
    "Okay, dinner's ready, catch you later!",
    "Let's talk again next week, take care.",
    "Gotta go, my meeting is starting. Bye!",
];

/// Small talk: `{thing}` is filled from [`SMALL_TALK_THINGS`].
pub(super) const SMALL_TALK: &[&str] = &[
    "The weather has been so gloomy this week, I barely left the house.",
    "Work was chaos, we had three meetings about one meeting.",
    "I made {thing} for dinner last night, it turned out alright.",
    "I've been binge-watching {thing}, have you seen it?",
    "My commute was awful today, the train stopped for twenty minutes.",
    "I need a vacation, honestly, even just a long weekend.",
    "I'm trying to drink less coffee, it's not going well.",
    "We had a power cut on Tuesday, I read by candlelight like it was 1850.",
    "My neighbour has been renovating for a month, the drilling starts at eight.",
    "I finally cleaned out the closet, found {thing} I forgot I had.",
    "I'm so tired, I stayed up too late reading about {thing}.",
    "Did you hear about the new place that opened on Main Street? They do {thing}.",
    "My coworker brought {thing} to the office, everyone went crazy for it.",
    "I keep meaning to call my grandmother more often.",
    "The heating in my building is broken again, I'm wearing two jumpers.",
    "I've been trying to go to bed earlier, it lasted two days.",
    "I think I'm coming down with a cold, my throat is scratchy.",
    "Traffic was terrible, there's roadwork on every corner.",
];

pub(super) const SMALL_TALK_THINGS: &[&str] = &[
    "lentil soup",
    "a murder mystery series",
    "homemade pizza",
    "the history of the Roman empire",
    "an old pair of roller skates",
    "bubble tea",
    "a cooking competition show",
    "a box of vinyl records",
    "spicy noodles",
    "a documentary about octopuses",
    "banana bread",
    "a Korean drama",
];

pub(super) const SMALL_TALK_REPLIES: &[&str] = &[
    "Ugh, same here.",
    "Ha, that sounds about right.",
    "Oh I know what you mean.",
    "That's so typical.",
    "Honestly, relatable.",
    "I'd have done the same.",
    "Oh no, hope it gets better.",
    "Ha! Classic.",
];

/// What the other person says about someone else: same words as the
/// facts, wrong person.
pub(super) const HEARSAY: &[&str] = &[
    "My coworker just got back from {place} and won't stop talking about it.",
    "My neighbour's {pet} keeps barking at the mailman.",
    "A friend of mine tried {hobby} once and hated it.",
    "My boss is reading {book} and keeps quoting it in meetings.",
];

pub(super) const MONTHS: &[&str] = &[
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
