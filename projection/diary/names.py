"""Diarist names: unique first + last name combinations, drawn deterministically."""

from __future__ import annotations

import random

FIRST_NAMES = """
Aaron Abigail Adam Adrian Agnes Aidan Alan Albert Alice Alma Amber Amelia Amos Andrea Angela
Anita Ansel Anton April Arlo Arthur Astrid Audrey August Aurora Austin Barbara Basil Beatrice
Benedict Bernard Bertha Bianca Boris Brenda Brian Bruno Caleb Camille Carl Carmen Carol Cecil
Cedric Celia Chester Chloe Clara Claude Clement Colin Cora Cyrus Dahlia Daisy Damian Daniel
Daphne Darius Delia Dennis Diana Dmitri Dolores Dominic Dorothy Douglas Edgar Edith Edmund
Edwin Eileen Elena Elias Eliza Ellis Elsa Emil Emma Enzo Esther Ethan Eugene Eva Evelyn Fabian
Felix Fiona Flora Floyd Frances Frank Freya Gabriel Gemma George Gerald Gideon Gilbert Gloria
Gordon Grace Gregory Greta Gustav Hannah Harold Harriet Hazel Hector Helen Henry Hilda Homer
Hugo Ida Igor Imogen Ingrid Irene Isaac Isabel Ivan Ivy Jacob Jasper Jean Jessica Joan Joel
Jonas Joseph Judith Julian Juliet June Karen Kasper Katrin Keith Kira Lars Laura Leah Leon
Leonora Lewis Lila Linus Lionel Lola Lorenzo Louise Lucas Lucia Luna Lydia Mabel Magnus Malcolm
Marcel Margot Maria Marius Martha Mateo Matilda Maya Melvin Milo Miriam Molly Morgan Nadia
Naomi Nathan Neil Nell Nico Nina Noah Nora Oliver Olivia Omar Opal Oscar Otto Pablo Pamela
Paul Pearl Penelope Peter Philip Phoebe Piper Quentin Quinn Rachel Ralph Raymond Rebecca Regina
Rex Rita Robert Rosa Rowan Ruby Rufus Ruth Sabrina Samuel Sara Selma Seth Sibyl Silas Simon
Sofia Stella Stephen Sylvia Talia Teresa Thea Theodore Thomas Tobias Ursula Valentin Vera
Victor Viola Vivian Walter Wanda Wendy Wilbur Willa Xavier Yara Yusuf Zara Zelda Zoe Ada Boyd
Cyril Dora Elmer Faye Gus Hal
""".split()

LAST_NAMES = """
Abbott Acosta Adler Alder Allard Ambrose Archer Arden Ashby Atwood Bailey Baker Baldwin Banner
Barlow Barnes Barton Baxter Beckett Bell Benson Berger Bishop Blackwood Blair Bloom Booth
Bowman Bradley Brandt Brennan Brooks Buckley Burke Burton Byrne Calder Campbell Carver Castle
Chandler Chapman Clayton Cole Collins Conrad Cooper Corbett Crane Crawford Cross Dalton Darby
Davenport Dawson Decker Delaney Dixon Donovan Doyle Drake Dunbar Duncan Durand Easton Ellison
Emerson Engel Evans Fairfax Falk Farrell Fenwick Fields Fisher Fleming Fletcher Flynn Forbes
Ford Foster Fowler Frost Fuller Gallagher Garner Gibson Gilmore Glover Goodwin Graham Grant
Graves Gray Griffin Hadley Hale Hall Hammond Hardy Harper Hartley Hawkins Hayes Heath Hendricks
Holland Holt Hopper Howell Hughes Hunt Ingram Irving Jansen Jarvis Jennings Keller Kendall
Kerr Kessler Kimball Kirby Knight Lambert Landry Lane Larsen Lawson Leclerc Lindqvist Lister
Lowell Lucero Lynch Maddox Malone Manning Marsh Mason Maxwell Mercer Merritt Milner Monroe
Moreau Morrow Mueller Munro Nash Neville Newman Nolan Norris Novak Oakley Olsen Osborne Owens
Palmer Parker Payne Pearson Pennington Perry Pierce Porter Prescott Price Quinlan Radcliffe
Ramsey Randall Reed Reyes Richter Ridley Rivers Roberts Rowe Russo Salazar Sanders Sawyer
Schmidt Sellers Sexton Shaw Sheldon Sherwood Silva Sinclair Slater Sloane Spencer Stafford
Stanton Sterling Stone Strand Sullivan Sutton Sweeney Talbot Tanner Tate Thornton Thorpe
Tierney Townsend Tucker Turner Underwood Upton Vance Vaughn Vega Vogel Wade Walker Wallace
Walsh Ward Warren Watson Weaver Webb Wells Weston Wheeler Whitaker Whitman Wilder Winslow Winter
Wolfe Wood Wright Wyatt Yates York Young Zimmerman Ziegler Ames Blythe Carrow Dunmore Elwood
Fairbanks Greer Holloway
""".split()

MAX_DIARISTS = len(FIRST_NAMES) * len(LAST_NAMES)


def draw_names(count: int, rng: random.Random) -> list[str]:
    """``count`` distinct ``First Last`` names, in an order fixed by ``rng``'s state."""
    if not 0 < count <= MAX_DIARISTS:
        raise ValueError(f"can draw 1 to {MAX_DIARISTS} distinct names, not {count}")
    picks = rng.sample(range(MAX_DIARISTS), count)
    return [f"{FIRST_NAMES[i // len(LAST_NAMES)]} {LAST_NAMES[i % len(LAST_NAMES)]}" for i in picks]
